#include "models/generation/generate_sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

namespace zt::models {
namespace {

constexpr double kMinusInf = -std::numeric_limits<double>::infinity();

std::vector<double> softmax(const std::vector<double>& logits) {
  double top = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p(logits.size());
  double total = 0.0;
  for (std::size_t i = 0; i < logits.size(); ++i) total += p[i] = std::exp(logits[i] - top);
  for (double& v : p) v /= total;
  return p;
}

}  // namespace

void apply_repetition_penalty(std::vector<double>& logits, const std::vector<std::int64_t>& seen, double penalty) {
  if (penalty == 1.0) return;
  for (std::int64_t id : std::set<std::int64_t>(seen.begin(), seen.end())) {
    if (id < 0 || id >= static_cast<std::int64_t>(logits.size())) continue;
    double& v = logits[static_cast<std::size_t>(id)];
    v = v < 0.0 ? v * penalty : v / penalty;
  }
}

void apply_top_k(std::vector<double>& logits, std::int64_t k) {
  if (k <= 0 || k >= static_cast<std::int64_t>(logits.size())) return;
  std::vector<double> sorted = logits;
  std::nth_element(sorted.begin(), sorted.begin() + (k - 1), sorted.end(), std::greater<>());
  double kth = sorted[static_cast<std::size_t>(k - 1)];
  for (double& v : logits)
    if (v < kth) v = kMinusInf;
}

void apply_top_p(std::vector<double>& logits, double top_p) {
  if (top_p >= 1.0) return;
  std::vector<double> p = softmax(logits);
  std::vector<std::size_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return logits[a] < logits[b]; });
  // As transformers does: ascending, drop while the cumulative mass stays within 1 - top_p,
  // never the most likely token.
  double cumulative = 0.0;
  for (std::size_t i = 0; i + 1 < order.size(); ++i) {
    cumulative += p[order[i]];
    if (cumulative > 1.0 - top_p) break;
    logits[order[i]] = kMinusInf;
  }
}

std::int64_t argmax(const std::vector<double>& logits) {
  return static_cast<std::int64_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

void apply_min_new_tokens(std::vector<double>& logits, std::int64_t generated, const GenerationOptions& options) {
  if (generated >= options.min_new_tokens) return;
  for (std::int64_t id : options.eos_token_ids)
    if (id >= 0 && id < static_cast<std::int64_t>(logits.size()))
      logits[static_cast<std::size_t>(id)] = -std::numeric_limits<double>::infinity();
}

std::int64_t choose_token(std::vector<double> logits, const std::vector<std::int64_t>& seen,
                          const GenerationOptions& options, double uniform) {
  apply_repetition_penalty(logits, seen, options.repetition_penalty);
  if (!options.do_sample) return argmax(logits);
  for (double& v : logits) v /= options.temperature;
  apply_top_k(logits, options.top_k);
  apply_top_p(logits, options.top_p);
  std::vector<double> p = softmax(logits);
  double cumulative = 0.0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    cumulative += p[i];
    if (uniform < cumulative && p[i] > 0.0) return static_cast<std::int64_t>(i);
  }
  return argmax(logits);  // rounding left the cumulative sum just below `uniform`
}

}  // namespace zt::models
