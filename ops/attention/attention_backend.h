// The choice of attention implementation (the `attn_impl` setting): zerotune's own kernels
// (ops/attention/attention.h: every device, dtype, prefix and layout) or cuDNN's fused flash
// attention (bfloat16/float16 on the GPU, causal or full, GQA, packed variable lengths; no
// prefix; a graph built per new shape). Both take and return the same tensors, lse included,
// so a forward from one and a backward from the other agree. See docs/ATTENTION.md for when
// cuDNN is the better choice.
#pragma once

#include <cstdint>
#include <string>

#include "ops/attention/attention.h"

namespace zt::ops {

enum class AttentionImpl { kZerotune, kCudnn };

// "zerotune" or "cudnn"; anything else throws zt::Error listing both.
AttentionImpl attention_impl_from_name(const std::string& name);
const char* attention_impl_name(AttentionImpl impl);

// The kernels `impl` runs for a model's attention (dtype, head_dim) on `device`, for the start
// line: "cuDNN fused flash attention" or ops::attention_kernel_name's answer.
std::string attention_kernel_description(AttentionImpl impl, Device device, DType dtype, std::int64_t head_dim);

// ops::attention_forward / attention_backward through `impl`. With kCudnn, an input cuDNN
// does not take (CPU tensors, float32/float64, a prefix, head_dim not a multiple of 8 or over
// 256) throws zt::Error saying why and naming attn_impl=zerotune.
AttentionOutput attention_forward_with(AttentionImpl impl, const Tensor& q, const Tensor& k, const Tensor& v,
                                       const Tensor& cu_seqlens, const AttentionConfig& config,
                                       const AttentionPrefix& prefix = {});
AttentionGrads attention_backward_with(AttentionImpl impl, const Tensor& grad_out, const Tensor& q, const Tensor& k,
                                       const Tensor& v, const Tensor& out, const Tensor& lse, const Tensor& cu_seqlens,
                                       const AttentionConfig& config, const AttentionPrefix& prefix = {});

}  // namespace zt::ops
