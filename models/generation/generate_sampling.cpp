#include "models/generation/generate_sampling.h"

#include "ops/sampling/logits_processors.h"

namespace zt::models {

void apply_repetition_penalty(std::vector<double>& logits, const std::vector<std::int64_t>& seen, double penalty) {
  ops::apply_repetition_penalty(logits, seen, penalty);
}

void apply_top_k(std::vector<double>& logits, std::int64_t k) { ops::apply_top_k(logits, k); }

void apply_top_p(std::vector<double>& logits, double top_p) { ops::apply_top_p(logits, top_p); }

std::int64_t argmax(const std::vector<double>& logits) { return ops::first_argmax(logits); }

void apply_min_new_tokens(std::vector<double>& logits, std::int64_t generated, const GenerationOptions& options) {
  if (generated < options.min_new_tokens) ops::bar_tokens(logits, options.eos_token_ids);
}

ops::RowSampling row_sampling(const GenerationOptions& options, std::span<const std::int64_t> seen,
                              std::span<const std::int64_t> barred, double uniform) {
  return {.do_sample = options.do_sample,
          .temperature = options.temperature,
          .top_k = options.top_k,
          .top_p = options.top_p,
          .min_p = options.min_p,
          .repetition_penalty = options.repetition_penalty,
          .seen = seen,
          .barred = barred,
          .uniform = uniform};
}

std::int64_t choose_token(std::vector<double> logits, const std::vector<std::int64_t>& seen,
                          const GenerationOptions& options, double uniform) {
  return ops::sample_row(std::move(logits), row_sampling(options, seen, {}, uniform));
}

}  // namespace zt::models
