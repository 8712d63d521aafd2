// Keys and values of the tokens a generation has already seen. A decoder layer hands the cache
// its new tokens' q, k and v and gets their attention back: the cache decides how it stores
// keys and values and which attention reads them. infer/paged_kv_cache.h serves many
// sequences from blocks; models/reference/sequence_kv_cache.h is the simple one the
// reference generation path uses.
#pragma once

#include <cstdint>
#include <optional>

#include "models/config/config.h"
#include "models/model_inputs.h"
#include "ops/rope/rope.h"
#include "tensor/tensor.h"

namespace zt::models {

class KvCache {
 public:
  virtual ~KvCache() = default;

  // Called before the layers run on a packed batch of new tokens: throws, saying why, when
  // the batch does not fit what the cache holds (sequence count, room, sliding window).
  virtual void begin_forward(const ModelConfig& config, const PackedShape& shape) = 0;
  // q [tokens, heads, head_dim] and k, v [tokens, kv_heads, head_dim] of `layer` (k after
  // RoPE): stores k and v and returns q's causal attention over each sequence's cached tokens
  // followed by its new ones, [tokens, heads, head_dim].
  virtual Tensor attend(std::int64_t layer, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& cu_seqlens,
                        double softmax_scale) = 0;
  // attend() for q and k before RoPE, which rotates them by `rope` at `positions` first. This
  // one rotates out of place and calls attend(); a cache may rotate q and k in place and store
  // k and v in the same pass (infer/paged_kv_cache.h), so q's and k's heads must be contiguous.
  virtual Tensor attend_unrotated(std::int64_t layer, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& positions, const ops::RopeConfig& rope, const Tensor& cu_seqlens,
                                  double softmax_scale) {
    return attend(layer, ops::rope_forward(q, positions, rope), ops::rope_forward(k, positions, rope), v, cu_seqlens,
                  softmax_scale);
  }
  // The attention of a layer whose q, k and v are one joined product of x [tokens, hidden] by
  // qkv_weight [(heads + 2 kv_heads) * head_dim, hidden] (+ qkv_bias), before RoPE: a cache may
  // run the product, the rotation and its write as one launch (infer/paged_kv_cache.h, on the GPU
  // for a decode step). nullopt, having done nothing: this one does not, and the caller projects
  // and calls attend_unrotated().
  virtual std::optional<Tensor> attend_projected(std::int64_t /*layer*/, const Tensor& /*x*/,
                                                 const Tensor& /*qkv_weight*/, const Tensor& /*qkv_bias*/,
                                                 const Tensor& /*positions*/, const Tensor& /*cu_seqlens*/,
                                                 double /*softmax_scale*/) {
    return std::nullopt;
  }
  // Called after every layer ran: the new tokens count as cached from now on.
  virtual void end_forward() = 0;
};

}  // namespace zt::models
