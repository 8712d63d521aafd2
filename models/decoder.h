// One pre-norm decoder layer of any supported architecture, from the differentiable ops:
//   x -> RMSNorm -> q, k, v (fused or not, with bias where the config says) -> [Qwen3:
//   q/k RMSNorm over head_dim] -> RoPE -> causal varlen attention (GQA) -> output projection
//   -> [glm4: RMSNorm] -> + x -> RMSNorm -> SwiGLU MLP (fused [gate; up] or not) -> [glm4:
//   RMSNorm] -> + residual
// as transformers' Qwen2/Qwen3/Glm/Glm4 DecoderLayer and THUDM's GLMBlock compute it.
#pragma once

#include <array>
#include <functional>

#include "autograd/variable.h"
#include "models/activation_dump.h"
#include "models/batch.h"
#include "models/config/config.h"
#include "models/generation/kv_cache.h"
#include "models/parameter_gatherer.h"
#include "models/peft/adapters.h"
#include "models/weights/hf_names.h"
#include "ops/attention/attention_backend.h"

namespace zt::models {

using autograd::Variable;
using LayerWeights = std::array<Variable, kLayerSlotCount>;  // undefined where unused

struct TokenLayout {
  Tensor positions;                                              // [tokens] int64, on the model's device
  Tensor cu_seqlens;                                             // [sequences + 1] int32, on the model's device
  ops::AttentionImpl attn_impl = ops::AttentionImpl::kZerotune;  // for uncached attention
  bool deterministic_attention = false;                          // ModelOptions::deterministic_attention
  SharedPrefixes shared = {};  // on the model's device; undefined when every sequence is stored whole
};

// Tensor parallelism (models/tensor_parallel.h): a rank's attention output projection and MLP
// down projection each compute one term of a sum over the ranks; this sums them, in place.
using PartialSumReducer = std::function<void(const Tensor& partial)>;

// The layer's weights and what an adapter adds to them (either pointer may be null).
struct LayerParameters {
  const LayerWeights* weights = nullptr;
  const LayerLora* lora = nullptr;
  const PrefixKv* prefix = nullptr;
  bool training = false;                                   // adapter dropout on: this forward will be differentiated
  LayerRecording record;                                   // the layer's activations, when a recorder is set
  const PartialSumReducer* reduce_partial_sums = nullptr;  // null: the layer is whole on this device
  // Set when the layer runs ungathered (ParameterGatherer::multiplies_held): each linear
  // multiplies through held_linear, the weights' Variables being empty.
  const ParameterGatherer* held_weights = nullptr;
};

// The hidden state between layers as residual + delta, the add left to the RMSNorm that reads
// it next (the next layer's input norm, or the final norm), which adds and normalizes in one
// kernel bit for bit as the pair: one launch and one pass over the hidden state fewer per
// layer. delta undefined: the state is residual alone.
struct ResidualStream {
  Variable residual;
  Variable delta;
  Variable summed() const;  // residual + delta as one tensor
};

// x [tokens, hidden] -> [tokens, hidden]. With a cache (no gradient), the cache computes the
// attention over its sequences' cached keys and values and the new ones, and keeps the new
// ones (a P-Tuning prefix is then expected in the cache, put there before the prompt).
Variable decoder_layer(const ModelConfig& config, std::int64_t layer, const LayerParameters& parameters,
                       const Variable& x, const TokenLayout& tokens, KvCache* cache = nullptr);
// The same layer on a stream, returning its MLP output as the next delta. With a recorder
// the output is summed, as the recorded layer output is.
ResidualStream decoder_layer(const ModelConfig& config, std::int64_t layer, const LayerParameters& parameters,
                             const ResidualStream& x, const TokenLayout& tokens, KvCache* cache = nullptr);

// RMSNorm of the stream's state: {the summed state, its norm}, one kernel when delta is defined.
struct NormedSum {
  Variable sum;
  Variable normed;
};
NormedSum normed_stream(const ModelConfig& config, const ResidualStream& x, const Variable& weight);

}  // namespace zt::models
