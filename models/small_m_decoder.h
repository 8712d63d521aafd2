// The decoder layer of a cached step of at most ops::kSmallMMaxRows tokens (a decode step)
// through ops/gemv's one-launch linears: the input norm read as q, k and v are projected
// (bias in the epilogue), the residual added in the output projection's and the down
// projection's epilogues, the post-attention norm read by gate and up, and SwiGLU applied as
// the down projection reads its input. The rest (q/k norms, RoPE, paged attention) is the
// ordinary layer's. The CPU runs the same ops the ordinary layer does, in the same order, so
// its results are bit for bit that layer's; on a GPU the layer takes about half the kernels.
#pragma once

#include "models/decoder.h"

namespace zt::models {

// Whether the step may take this layer: asked for (TokenLayout::small_m_layers), with a cache
// and no gradient, few enough tokens, and none of what the fused linears do not carry (LoRA
// beside the weights, weights left ungathered in 4 bits, a tensor-parallel shard, GLM-4's
// norms after attention and MLP, an activation recorder).
bool small_m_layer_applies(const ModelConfig& config, const LayerParameters& parameters, const Variable& x,
                           const TokenLayout& tokens, const KvCache* cache);

// What decoder_layer computes, for a step small_m_layer_applies to.
Variable small_m_decoder_layer(const ModelConfig& config, std::int64_t layer, const LayerParameters& parameters,
                               const Variable& x, const TokenLayout& tokens, KvCache& cache);

}  // namespace zt::models
