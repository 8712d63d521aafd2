#include "ops/attention/attention_backend.h"

#include "ops/attention/attention.h"
#include "ops/attention/attention_backend_cudnn.h"
#include "runtime/device.h"
#include "runtime/error.h"

namespace zt::ops {

AttentionImpl attention_impl_from_name(const std::string& name) {
  if (name == "auto") return AttentionImpl::kAuto;
  if (name == "zerotune") return AttentionImpl::kZerotune;
  if (name == "cudnn") return AttentionImpl::kCudnn;
  fail("attn_impl is \"" + name +
       "\"; use \"auto\" (the fastest measured for each call), \"zerotune\" (zerotune's own kernels, every "
       "case) or \"cudnn\" (cuDNN's fused flash attention: bfloat16/float16 on the GPU, no prefix)");
}

const char* attention_impl_name(AttentionImpl impl) {
  switch (impl) {
    case AttentionImpl::kAuto:
      return "auto";
    case AttentionImpl::kCudnn:
      return "cudnn";
    default:
      return "zerotune";
  }
}

AttentionImpl resolve_attention_impl(AttentionImpl impl, Device device, DType dtype, std::int64_t head_dim,
                                     bool has_prefix) {
  if (impl != AttentionImpl::kAuto) return impl;
  const bool cudnn_takes = device.is_cuda() && (dtype == DType::kBF16 || dtype == DType::kF16) && !has_prefix &&
                           head_dim % 8 == 0 && head_dim <= 256;
  if (cudnn_takes && device_properties(device.index).compute_major == 9) return AttentionImpl::kCudnn;
  return AttentionImpl::kZerotune;
}

std::string attention_kernel_description(AttentionImpl impl, Device device, DType dtype, std::int64_t head_dim,
                                         bool has_prefix) {
  const AttentionImpl runs = resolve_attention_impl(impl, device, dtype, head_dim, has_prefix);
  const std::string chosen = impl == AttentionImpl::kAuto ? " (attn_impl auto)" : "";
  if (runs == AttentionImpl::kCudnn) return "cuDNN fused flash attention" + chosen;
  return attention_kernel_name(device, dtype, head_dim) + chosen;
}

namespace {

AttentionImpl resolve(AttentionImpl impl, const Tensor& q, const AttentionPrefix& prefix) {
  if (impl != AttentionImpl::kAuto) return impl;
  return resolve_attention_impl(impl, q.device(), q.dtype(), q.dim() == 3 ? q.shape()[2] : 0, prefix.k.defined());
}

}  // namespace

AttentionOutput attention_forward_with(AttentionImpl impl, const Tensor& q, const Tensor& k, const Tensor& v,
                                       const Tensor& cu_seqlens, const AttentionConfig& config,
                                       const AttentionPrefix& prefix) {
  if (resolve(impl, q, prefix) == AttentionImpl::kCudnn)
    return detail::cudnn_attention_forward(q, k, v, cu_seqlens, config, prefix);
  return attention_forward(q, k, v, cu_seqlens, config, prefix);
}

AttentionGrads attention_backward_with(AttentionImpl impl, const Tensor& grad_out, const Tensor& q, const Tensor& k,
                                       const Tensor& v, const Tensor& out, const Tensor& lse, const Tensor& cu_seqlens,
                                       const AttentionConfig& config, const AttentionPrefix& prefix) {
  if (resolve(impl, q, prefix) == AttentionImpl::kCudnn)
    return detail::cudnn_attention_backward(grad_out, q, k, v, out, lse, cu_seqlens, config, prefix);
  return attention_backward(grad_out, q, k, v, out, lse, cu_seqlens, config, prefix);
}

}  // namespace zt::ops
