#include "models/reference/generate.h"

#include <algorithm>

#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "models/generation/generate_sampling.h"
#include "models/reference/sequence_kv_cache.h"
#include "runtime/error.h"
#include "runtime/philox.h"

namespace zt::models {
namespace {

Tensor id_tensor(const std::vector<std::int64_t>& values, DType dtype) {
  std::vector<double> as_double(values.begin(), values.end());
  return Tensor::from_values(as_double, {static_cast<std::int64_t>(values.size())}, dtype);
}

// Logits of the last token of `tokens`, which continue the cached ones; the first of them
// sits at `first_position` (behind a prefix: 0 or the prefix length, PrefixPositions).
std::vector<double> next_logits(const CausalLM& model, const std::vector<std::int64_t>& tokens, SequenceKvCache& cache,
                                std::int64_t first_position) {
  std::vector<std::int64_t> positions(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i) positions[i] = first_position + static_cast<std::int64_t>(i);
  std::vector<std::int64_t> cu{0, static_cast<std::int64_t>(tokens.size())};
  autograd::Variable hidden = model.forward_hidden(id_tensor(tokens, DType::kI64), id_tensor(positions, DType::kI64),
                                                   id_tensor(cu, DType::kI32), &cache);
  autograd::Variable last = autograd::narrow(hidden, 0, static_cast<std::int64_t>(tokens.size()) - 1, 1);
  return model.lm_head(last).data().to_vector();
}

// P-Tuning v2's prefix (a single sequence's) goes into the cache ahead of the prompt, as
// ChatGLM passes it in as past_key_values: every later token attends to it.
void write_prefix(const std::vector<PrefixKv>& prefix, SequenceKvCache& cache) {
  if (prefix.empty()) return;
  std::vector<Tensor> keys, values;
  for (const PrefixKv& layer : prefix) {
    keys.push_back(layer.keys.data().squeeze(0));
    values.push_back(layer.values.data().squeeze(0));
  }
  cache.prepend(keys, values);
}

}  // namespace

std::vector<std::int64_t> generate(const CausalLM& model, const std::vector<std::int64_t>& prompt,
                                   const GenerationOptions& options) {
  check_generation_options(options);
  ZT_REQUIRE(!prompt.empty(), "generate: the prompt has no tokens");
  autograd::NoGradGuard no_recording;
  std::vector<std::int64_t> seen = prompt, generated;
  if (options.max_new_tokens == 0) return generated;
  std::vector<PrefixKv> prefix;
  if (model.prefix_source()) prefix = model.prefix_source()(1);
  const std::int64_t prefix_length = prefix.empty() ? 0 : prefix.front().keys.data().size(1);
  SequenceKvCache cache(model.config(),
                        prefix_length + static_cast<std::int64_t>(prompt.size()) + options.max_new_tokens,
                        model.dtype(), model.device());
  write_prefix(prefix, cache);
  const std::int64_t first_position = first_position_after(model.prefix_positions(), prefix_length);
  std::vector<std::int64_t> step_input = prompt;
  for (std::int64_t step = 0; step < options.max_new_tokens; ++step) {
    double uniform = philox::uniform(options.seed, static_cast<std::uint64_t>(step), 0);
    std::vector<double> logits = next_logits(model, step_input, cache, cache.length() - prefix_length + first_position);
    apply_min_new_tokens(logits, step, options);
    std::int64_t token = choose_token(logits, seen, options, uniform);
    generated.push_back(token);
    seen.push_back(token);
    const auto& eos = options.eos_token_ids;
    if (std::find(eos.begin(), eos.end(), token) != eos.end()) break;
    step_input = {token};
  }
  return generated;
}

}  // namespace zt::models
