// Random initialisation from a config alone, as transformers' _init_weights does it:
// matrices and embeddings normal(0, initializer_range), norm weights 1, biases 0, the
// padding row of the embedding 0. Values are drawn on the host in float32 from the Philox
// stream of `seed`, parameter after parameter, so a seed gives the same model on any
// device and in any dtype (up to its rounding).
#pragma once

#include <cstdint>

#include "models/model.h"

namespace zt::models {

void init_weights(CausalLM& model, std::uint64_t seed);

// A model of `config` on options.device in options.dtype, filled by init_weights.
CausalLM init_model(const ModelConfig& config, std::uint64_t seed, const ModelOptions& options = {});

}  // namespace zt::models
