#include "ops/sampling/logits_processors.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <set>

namespace zt::ops {
namespace {

constexpr double kMinusInf = -std::numeric_limits<double>::infinity();

bool inside(std::int64_t id, const std::vector<double>& logits) {
  return id >= 0 && id < static_cast<std::int64_t>(logits.size());
}

}  // namespace

void bar_tokens(std::vector<double>& logits, std::span<const std::int64_t> ids) {
  for (std::int64_t id : ids)
    if (inside(id, logits)) logits[static_cast<std::size_t>(id)] = kMinusInf;
}

void apply_repetition_penalty(std::vector<double>& logits, std::span<const std::int64_t> seen, double penalty) {
  if (penalty == 1.0) return;
  for (std::int64_t id : std::set<std::int64_t>(seen.begin(), seen.end())) {
    if (!inside(id, logits)) continue;
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

void apply_min_p(std::vector<double>& logits, double min_p) {
  if (min_p <= 0.0 || logits.empty()) return;
  const double top = *std::max_element(logits.begin(), logits.end());
  for (double& v : logits)
    if (std::exp(v - top) < min_p) v = kMinusInf;
}

std::int64_t first_argmax(const std::vector<double>& logits) {
  return static_cast<std::int64_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

std::vector<double> softmax(const std::vector<double>& logits) {
  double top = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p(logits.size());
  double total = 0.0;
  for (std::size_t i = 0; i < logits.size(); ++i) total += p[i] = std::exp(logits[i] - top);
  for (double& v : p) v /= total;
  return p;
}

}  // namespace zt::ops
