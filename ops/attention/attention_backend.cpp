#include "ops/attention/attention_backend.h"

#include <optional>

#include "ops/attention/attention.h"
#include "ops/attention/attention_backend_cudnn.h"
#include "runtime/enum_names.h"
#include "runtime/error.h"

namespace zt::ops {

namespace {
constexpr EnumName<AttentionImpl> kImplNames[] = {{AttentionImpl::kZerotune, "zerotune"},
                                                  {AttentionImpl::kCudnn, "cudnn"}};
}  // namespace

AttentionImpl attention_impl_from_name(const std::string& name) {
  if (std::optional<AttentionImpl> impl = find_value(kImplNames, name)) return *impl;
  // The names with what each one runs, which a bare list of names would not say.
  fail("attn_impl is \"" + name +
       "\"; use \"zerotune\" (zerotune's own kernels, every case) or \"cudnn\" "
       "(cuDNN's fused flash attention: bfloat16/float16 on the GPU, no prefix)");
}

const char* attention_impl_name(AttentionImpl impl) { return name_of(kImplNames, impl); }

std::string attention_kernel_description(AttentionImpl impl, Device device, DType dtype, std::int64_t head_dim) {
  if (impl == AttentionImpl::kCudnn) return "cuDNN fused flash attention";
  return attention_kernel_name(device, dtype, head_dim);
}

AttentionOutput attention_forward_with(AttentionImpl impl, const Tensor& q, const Tensor& k, const Tensor& v,
                                       const Tensor& cu_seqlens, const AttentionConfig& config,
                                       const AttentionPrefix& prefix) {
  if (impl == AttentionImpl::kCudnn) return detail::cudnn_attention_forward(q, k, v, cu_seqlens, config, prefix);
  return attention_forward(q, k, v, cu_seqlens, config, prefix);
}

AttentionGrads attention_backward_with(AttentionImpl impl, const Tensor& grad_out, const Tensor& q, const Tensor& k,
                                       const Tensor& v, const Tensor& out, const Tensor& lse, const Tensor& cu_seqlens,
                                       const AttentionConfig& config, const AttentionPrefix& prefix) {
  if (impl == AttentionImpl::kCudnn)
    return detail::cudnn_attention_backward(grad_out, q, k, v, out, lse, cu_seqlens, config, prefix);
  return attention_backward(grad_out, q, k, v, out, lse, cu_seqlens, config, prefix);
}

}  // namespace zt::ops
