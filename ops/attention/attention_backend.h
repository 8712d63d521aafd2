// The choice of attention implementation (the `attn_impl` setting): zerotune's own kernels
// (ops/attention/attention.h: every device, dtype, prefix and layout), cuDNN's fused flash
// attention (bfloat16/float16 on the GPU, causal or full, GQA, packed variable lengths; no
// prefix), or `auto`, per call the one measured fastest for it (docs/ATTENTION.md). All take and
// return the same tensors, lse included, so a forward from one and a backward from another agree.
#pragma once

#include <cstdint>
#include <string>

#include "ops/attention/attention.h"

namespace zt::ops {

enum class AttentionImpl { kAuto, kZerotune, kCudnn };

// "auto", "zerotune" or "cudnn"; anything else throws zt::Error listing them.
AttentionImpl attention_impl_from_name(const std::string& name);
const char* attention_impl_name(AttentionImpl impl);

// What kAuto runs for a call: cuDNN on Hopper (compute capability 9.x) for the inputs it takes
// (bfloat16/float16 GPU tensors, head_dim a multiple of 8 up to 256, no prefix), where it was
// measured faster than zerotune's kernels for training (docs/PERF.md); zerotune's otherwise.
// Other choices are returned as they are.
AttentionImpl resolve_attention_impl(AttentionImpl impl, Device device, DType dtype, std::int64_t head_dim,
                                     bool has_prefix);

// The kernels `impl` runs for a model's attention, for the start line: "cuDNN fused flash
// attention", "zerotune Hopper kernels (wgmma, TMA)", "zerotune FlashAttention-2 kernels",
// "zerotune simple kernels" or "zerotune CPU kernels", with what `auto` chose.
std::string attention_kernel_description(AttentionImpl impl, Device device, DType dtype, std::int64_t head_dim,
                                         bool has_prefix);

// ops::attention_forward / attention_backward through `impl` (kAuto resolved per call as
// above). With kCudnn, an input cuDNN
// does not take (CPU tensors, float32/float64, a prefix, head_dim not a multiple of 8 or over
// 256) throws zt::Error saying why and naming attn_impl=zerotune.
AttentionOutput attention_forward_with(AttentionImpl impl, const Tensor& q, const Tensor& k, const Tensor& v,
                                       const Tensor& cu_seqlens, const AttentionConfig& config,
                                       const AttentionPrefix& prefix = {});
AttentionGrads attention_backward_with(AttentionImpl impl, const Tensor& grad_out, const Tensor& q, const Tensor& k,
                                       const Tensor& v, const Tensor& out, const Tensor& lse, const Tensor& cu_seqlens,
                                       const AttentionConfig& config, const AttentionPrefix& prefix = {});

}  // namespace zt::ops
