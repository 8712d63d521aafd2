#include "ops/attention/attention.h"

#include "cuda/attention/flash/flash_attention.cuh"
#include "cuda/attention/hopper/hopper_attention.cuh"
#include "cuda/attention/simple/attention.cuh"
#include "ops/attention/attention_cpu.h"
#include "ops/attention/attention_layout.h"
#include "runtime/device.h"
#include "runtime/streams/current_stream.h"

namespace zt::ops {
namespace {

using detail::AttentionLayout;

void* data_or_null(const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }

Tensor contiguous_or_undefined(const Tensor& t) { return t.defined() ? t.contiguous() : Tensor(); }

cuda::AttentionDims kernel_dims(const AttentionLayout& layout, const AttentionConfig& config) {
  cuda::AttentionDims dims;
  dims.total_tokens = layout.total_tokens;
  dims.batch = static_cast<int>(layout.batch);
  dims.num_heads = static_cast<int>(layout.num_heads);
  dims.num_kv_heads = static_cast<int>(layout.num_kv_heads);
  dims.head_dim = static_cast<int>(layout.head_dim);
  dims.prefix_len = static_cast<int>(layout.prefix_len);
  dims.max_seqlen = static_cast<int>(layout.max_seqlen);
  dims.softmax_scale = static_cast<float>(config.softmax_scale);
  dims.causal = config.causal;
  return dims;
}

// The kernels' inputs, made contiguous; the holders keep any copies alive for the launch.
struct KernelInputs {
  Tensor q, k, v, prefix_k, prefix_v, cu_seqlens;
  cuda::AttentionInputs pointers() const {
    return {q.data_ptr(),           k.data_ptr(),           v.data_ptr(),
            data_or_null(prefix_k), data_or_null(prefix_v), cu_seqlens.data<std::int32_t>()};
  }
};

KernelInputs kernel_inputs(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& cu_seqlens,
                           const AttentionPrefix& prefix) {
  return {q.contiguous(),
          k.contiguous(),
          v.contiguous(),
          contiguous_or_undefined(prefix.k),
          contiguous_or_undefined(prefix.v),
          cu_seqlens.contiguous()};
}

AttentionOutput forward_cuda(const AttentionLayout& layout, const Tensor& q, const Tensor& k, const Tensor& v,
                             const Tensor& cu_seqlens, const AttentionConfig& config, const AttentionPrefix& prefix) {
  DeviceGuard guard(q.device().index);
  KernelInputs inputs = kernel_inputs(q, k, v, cu_seqlens, prefix);
  AttentionOutput result{Tensor::empty(q.shape(), q.dtype(), q.device()),
                         Tensor::empty({layout.total_tokens, layout.num_heads}, DType::kF32, q.device())};
  const cuda::AttentionDims dims = kernel_dims(layout, config);
  const cuda::AttentionInputs pointers = inputs.pointers();
  const std::initializer_list<const void*> rows = {pointers.q,        pointers.k,        pointers.v,
                                                   pointers.prefix_k, pointers.prefix_v, result.out.data_ptr()};
  if (cuda::hopper_attention_supported(dims, q.dtype(), rows))
    cuda::hopper_attention_forward(dims, pointers, q.dtype(), result.out.data_ptr(), result.lse.data<float>(),
                                   current_stream());
  else if (cuda::flash_attention_supported(dims, q.dtype(), rows))
    cuda::flash_attention_forward(dims, pointers, q.dtype(), result.out.data_ptr(), result.lse.data<float>(),
                                  current_stream());
  else
    cuda::attention_forward(dims, pointers, q.dtype(), result.out.data_ptr(), result.lse.data<float>(),
                            current_stream());
  return result;
}

AttentionGrads backward_cuda(const AttentionLayout& layout, const Tensor& grad_out, const Tensor& q, const Tensor& k,
                             const Tensor& v, const Tensor& out, const Tensor& lse, const Tensor& cu_seqlens,
                             const AttentionConfig& config, const AttentionPrefix& prefix) {
  DeviceGuard guard(q.device().index);
  KernelInputs inputs = kernel_inputs(q, k, v, cu_seqlens, prefix);
  Tensor dout = grad_out.contiguous(), saved_out = out.contiguous(), saved_lse = lse.contiguous();
  Tensor delta = Tensor::empty({layout.total_tokens, layout.num_heads}, DType::kF32, q.device());
  AttentionGrads grads;
  grads.grad_q = Tensor::empty(q.shape(), q.dtype(), q.device());
  grads.grad_k = Tensor::empty(k.shape(), k.dtype(), k.device());
  grads.grad_v = Tensor::empty(v.shape(), v.dtype(), v.device());
  if (prefix.k.defined()) {
    grads.grad_prefix_k = Tensor::empty(prefix.k.shape(), prefix.k.dtype(), q.device());
    grads.grad_prefix_v = Tensor::empty(prefix.v.shape(), prefix.v.dtype(), q.device());
  }
  cuda::AttentionGradOutputs outputs{grads.grad_q.data_ptr(), grads.grad_k.data_ptr(), grads.grad_v.data_ptr(),
                                     data_or_null(grads.grad_prefix_k), data_or_null(grads.grad_prefix_v)};
  const cuda::AttentionDims dims = kernel_dims(layout, config);
  const cuda::AttentionInputs pointers = inputs.pointers();
  if (!cuda::flash_attention_supported(dims, q.dtype(),
                                       {pointers.q, pointers.k, pointers.v, pointers.prefix_k, pointers.prefix_v,
                                        saved_out.data_ptr(), dout.data_ptr()})) {
    cuda::attention_backward(dims, pointers, q.dtype(), saved_out.data_ptr(), dout.data_ptr(), saved_lse.data<float>(),
                             delta.data<float>(), outputs, current_stream());
    return grads;
  }
  // The atomic dQ paths sum into fp32 [total_tokens, num_heads, head_dim] before rounding.
  Tensor dq_accum = config.deterministic ? Tensor() : Tensor::empty(q.shape(), DType::kF32, q.device());
  if (!config.deterministic &&
      cuda::hopper_attention_supported(dims, q.dtype(),
                                       {pointers.q, pointers.k, pointers.v, pointers.prefix_k, pointers.prefix_v,
                                        saved_out.data_ptr(), dout.data_ptr()})) {
    Tensor lse_log2 = Tensor::empty({layout.num_heads, layout.total_tokens}, DType::kF32, q.device());
    const std::int64_t key_sum_floats = cuda::hopper_backward_key_sum_floats(dims);
    Tensor key_sums = key_sum_floats > 0 ? Tensor::empty({key_sum_floats}, DType::kF32, q.device()) : Tensor();
    cuda::hopper_attention_backward(dims, pointers, q.dtype(), saved_out.data_ptr(), dout.data_ptr(),
                                    saved_lse.data<float>(),
                                    {lse_log2.data<float>(), delta.data<float>(), dq_accum.data<float>(),
                                     key_sum_floats > 0 ? key_sums.data<float>() : nullptr},
                                    outputs, current_stream());
    return grads;
  }
  cuda::FlashBackwardScratch scratch{delta.data<float>(), config.deterministic ? nullptr : dq_accum.data<float>()};
  cuda::flash_attention_backward(dims, pointers, q.dtype(), saved_out.data_ptr(), dout.data_ptr(),
                                 saved_lse.data<float>(), scratch, outputs, config.deterministic, current_stream());
  return grads;
}

}  // namespace

std::string attention_kernel_name(Device device, DType dtype, std::int64_t head_dim) {
  if (device.is_cpu()) return "zerotune CPU kernels";
  DeviceGuard guard(device.index);
  cuda::AttentionDims dims;
  dims.head_dim = static_cast<int>(head_dim);
  dims.softmax_scale = 1.0f;
  if (cuda::hopper_attention_supported(dims, dtype, {})) return "zerotune Hopper kernels (wgmma, TMA)";
  if (cuda::flash_attention_supported(dims, dtype, {})) return "zerotune FlashAttention-2 kernels";
  return "zerotune simple kernels";
}

AttentionOutput attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& cu_seqlens,
                                  const AttentionConfig& config, const AttentionPrefix& prefix) {
  AttentionLayout layout = detail::check_attention_inputs("attention", q, k, v, cu_seqlens, config, prefix);
  if (q.device().is_cuda()) return forward_cuda(layout, q, k, v, cu_seqlens, config, prefix);
  return detail::attention_forward_cpu(layout, q, k, v, config, prefix);
}

AttentionGrads attention_backward(const Tensor& grad_out, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& out, const Tensor& lse, const Tensor& cu_seqlens,
                                  const AttentionConfig& config, const AttentionPrefix& prefix) {
  const char* op = "attention_backward";
  AttentionLayout layout = detail::check_attention_inputs(op, q, k, v, cu_seqlens, config, prefix);
  detail::check_attention_saved(op, grad_out, out, lse, q, layout);
  if (q.device().is_cuda()) return backward_cuda(layout, grad_out, q, k, v, out, lse, cu_seqlens, config, prefix);
  return detail::attention_backward_cpu(layout, grad_out, q, k, v, out, lse, config, prefix);
}

}  // namespace zt::ops
