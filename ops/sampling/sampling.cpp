#include "ops/sampling/sampling.h"

#include <cstdio>
#include <limits>
#include <string>

#include "cuda/sampling/sampling.cuh"
#include "ops/op_checks.h"
#include "ops/sampling/logits_processors.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/streams/current_stream.h"

namespace zt::ops {
namespace {

constexpr const char* kOp = "sample_rows";

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", v);
  return text;
}

void check_row(const RowSampling& r, std::size_t index) {
  const std::string row = std::string(kOp) + ": row " + std::to_string(index) + " has ";
  ZT_REQUIRE(r.repetition_penalty > 0.0,
             row + "repetition_penalty " + number(r.repetition_penalty) + "; it must be positive");
  ZT_REQUIRE(r.top_k >= 0,
             row + "top_k " + std::to_string(r.top_k) + "; it must not be negative (0 keeps every token)");
  ZT_REQUIRE(r.top_p > 0.0 && r.top_p <= 1.0,
             row + "top_p " + number(r.top_p) + "; it must be in (0, 1] (1 keeps every token)");
  ZT_REQUIRE(r.min_p >= 0.0 && r.min_p <= 1.0,
             row + "min_p " + number(r.min_p) + "; it must be in [0, 1] (0 keeps every token)");
  if (!r.do_sample) return;
  ZT_REQUIRE(r.temperature > 0.0, row + "temperature " + number(r.temperature) + "; sampling needs it positive");
  ZT_REQUIRE(r.uniform >= 0.0 && r.uniform < 1.0, row + "the draw " + number(r.uniform) + "; it must be in [0, 1)");
}

void check_logits(const Tensor& logits, const std::vector<RowSampling>& rows) {
  ZT_REQUIRE(logits.defined(), std::string(kOp) + ": logits is an undefined tensor");
  check_floating(kOp, {"logits", &logits});
  check_dim(kOp, {"logits", &logits}, 2);
  ZT_REQUIRE(static_cast<std::int64_t>(rows.size()) == logits.size(0),
             std::string(kOp) + ": logits has shape " + shape_str(logits.shape()) + " but the rules number " +
                 std::to_string(rows.size()) + "; one per row");
  ZT_REQUIRE(logits.size(1) >= 1 || logits.size(0) == 0,
             std::string(kOp) + ": logits has shape " + shape_str(logits.shape()) + "; a row needs at least one token");
  ZT_REQUIRE(logits.size(1) < std::numeric_limits<int>::max(),
             std::string(kOp) + ": logits has shape " + shape_str(logits.shape()) + "; at most " +
                 std::to_string(std::numeric_limits<int>::max() - 1) + " tokens");
}

std::vector<std::int64_t> sample_cpu(const Tensor& logits, const std::vector<RowSampling>& rows) {
  const Tensor host = logits.to(DType::kF64).contiguous();
  const double* data = host.data<double>();
  const std::int64_t vocab = host.size(1);
  std::vector<std::int64_t> chosen;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const double* row = data + static_cast<std::int64_t>(r) * vocab;
    chosen.push_back(sample_row(std::vector<double>(row, row + vocab), rows[r]));
  }
  return chosen;
}

// Each row's special tokens for the kernel: every id inside the vocabulary that is barred, or
// seen under a penalty other than 1, listed once with its flags (the reference penalises a
// repeated id once). `slot_` maps an id to its entry while its row is being listed.
class SpecialTokens {
 public:
  explicit SpecialTokens(std::int64_t vocab) : vocab_(vocab), slot_(static_cast<std::size_t>(vocab), -1) {}

  // Lists the row's tokens; returns the range [begin, end) they take in tokens().
  std::pair<std::int64_t, std::int64_t> add_row(const RowSampling& r) {
    const auto begin = static_cast<std::int64_t>(tokens_.size());
    for (std::int64_t id : r.barred) mark(id, cuda::kBarredToken);
    if (r.repetition_penalty != 1.0)
      for (std::int64_t id : r.seen) mark(id, cuda::kPenalisedToken);
    for (std::size_t j = static_cast<std::size_t>(begin); j < tokens_.size(); ++j)
      slot_[static_cast<std::size_t>(tokens_[j].id)] = -1;
    return {begin, static_cast<std::int64_t>(tokens_.size())};
  }
  const std::vector<cuda::SpecialToken>& tokens() const { return tokens_; }

 private:
  void mark(std::int64_t id, std::int32_t flag) {
    if (id < 0 || id >= vocab_) return;
    std::int32_t& slot = slot_[static_cast<std::size_t>(id)];
    if (slot < 0) {
      slot = static_cast<std::int32_t>(tokens_.size());
      tokens_.push_back({static_cast<std::int32_t>(id), 0});
    }
    tokens_[static_cast<std::size_t>(slot)].flags |= flag;
  }

  std::int64_t vocab_;
  std::vector<std::int32_t> slot_;
  std::vector<cuda::SpecialToken> tokens_;
};

std::vector<std::int64_t> sample_cuda(const Tensor& logits_in, const std::vector<RowSampling>& rows) {
  const Tensor logits = logits_in.size(1) <= 1 || logits_in.stride(1) == 1 ? logits_in : logits_in.contiguous();
  const std::int64_t batch = logits.size(0), vocab = logits.size(1);
  const std::int64_t row_stride = batch == 1 ? vocab : logits.stride(0);
  SpecialTokens specials(vocab);
  std::vector<cuda::SamplingRule> rules;
  for (const RowSampling& r : rows) {
    const auto [begin, end] = specials.add_row(r);
    rules.push_back({.temperature = r.temperature,
                     .top_p = r.top_p,
                     .min_p = r.min_p,
                     .repetition_penalty = r.repetition_penalty,
                     .uniform = r.uniform,
                     .top_k = r.top_k,
                     .special_begin = begin,
                     .special_end = end,
                     .do_sample = r.do_sample ? 1 : 0});
  }
  DeviceGuard guard(logits.device().index);
  Tensor out = Tensor::empty({batch}, DType::kI64, logits.device());
  cuda::sample_rows(logits.data_ptr(), logits.dtype(), batch, vocab, row_stride, rules.data(), specials.tokens().data(),
                    out.data<std::int64_t>(), current_stream());
  const Tensor host = out.to(Device::cpu());
  return std::vector<std::int64_t>(host.data<std::int64_t>(), host.data<std::int64_t>() + batch);
}

}  // namespace

std::vector<std::int64_t> sample_rows(const Tensor& logits, const std::vector<RowSampling>& rows) {
  check_logits(logits, rows);
  for (std::size_t i = 0; i < rows.size(); ++i) check_row(rows[i], i);
  if (rows.empty()) return {};
  return logits.device().is_cuda() ? sample_cuda(logits, rows) : sample_cpu(logits, rows);
}

std::int64_t sample_row(std::vector<double> logits, const RowSampling& row) {
  bar_tokens(logits, row.barred);
  apply_repetition_penalty(logits, row.seen, row.repetition_penalty);
  if (!row.do_sample) return first_argmax(logits);
  for (double& v : logits) v /= row.temperature;
  apply_top_k(logits, row.top_k);
  apply_top_p(logits, row.top_p);
  apply_min_p(logits, row.min_p);
  const std::vector<double> p = softmax(logits);
  double cumulative = 0.0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    cumulative += p[i];
    if (row.uniform < cumulative && p[i] > 0.0) return static_cast<std::int64_t>(i);
  }
  return first_argmax(logits);  // rounding left the cumulative sum just below the draw
}

}  // namespace zt::ops
