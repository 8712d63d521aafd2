#include "models/generate.h"

#include <algorithm>

#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "models/generate_sampling.h"
#include "runtime/error.h"
#include "runtime/philox.h"

namespace zt::models {
namespace {

Tensor id_tensor(const std::vector<std::int64_t>& values, DType dtype) {
  std::vector<double> as_double(values.begin(), values.end());
  return Tensor::from_values(as_double, {static_cast<std::int64_t>(values.size())}, dtype);
}

// Logits of the last token of `tokens`, which continue the cached ones.
std::vector<double> next_logits(const CausalLM& model, const std::vector<std::int64_t>& tokens, KvCache& cache) {
  std::vector<std::int64_t> positions(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i) positions[i] = cache.length() + static_cast<std::int64_t>(i);
  std::vector<std::int64_t> cu{0, static_cast<std::int64_t>(tokens.size())};
  autograd::Variable hidden =
      model.forward_hidden(id_tensor(tokens, DType::kI64), id_tensor(positions, DType::kI64),
                           id_tensor(cu, DType::kI32), &cache);
  autograd::Variable last = autograd::narrow(hidden, 0, static_cast<std::int64_t>(tokens.size()) - 1, 1);
  return model.lm_head(last).data().to_vector();
}

}  // namespace

std::vector<std::int64_t> generate(const CausalLM& model, const std::vector<std::int64_t>& prompt,
                                   const GenerationOptions& options) {
  check_generation_options(options);
  ZT_REQUIRE(!prompt.empty(), "generate: the prompt has no tokens");
  autograd::NoGradGuard no_recording;
  std::vector<std::int64_t> seen = prompt, generated;
  if (options.max_new_tokens == 0) return generated;
  KvCache cache(model.config(), static_cast<std::int64_t>(prompt.size()) + options.max_new_tokens, model.dtype(),
                model.device());
  std::vector<std::int64_t> step_input = prompt;
  for (std::int64_t step = 0; step < options.max_new_tokens; ++step) {
    double uniform = philox::uniform(options.seed, static_cast<std::uint64_t>(step), 0);
    std::int64_t token = choose_token(next_logits(model, step_input, cache), seen, options, uniform);
    generated.push_back(token);
    seen.push_back(token);
    const auto& eos = options.eos_token_ids;
    if (std::find(eos.begin(), eos.end(), token) != eos.end()) break;
    step_input = {token};
  }
  return generated;
}

}  // namespace zt::models
