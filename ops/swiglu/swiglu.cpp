#include "ops/swiglu/swiglu.h"

#include <cmath>
#include <string>

#include "cuda/swiglu/swiglu.cuh"
#include "ops/elementwise/elementwise_host.h"
#include "ops/op_checks.h"
#include "runtime/error.h"
#include "runtime/streams/current_stream.h"

namespace zt::ops {
namespace {

void check_has_last_dim(const char* op, NamedTensor t) {
  ZT_REQUIRE(t.second->dim() >= 1, std::string(op) + ": " + t.first + " must have at least one dimension, got shape " +
                                       shape_str(t.second->shape()));
}

cuda::SwigluLayout layout_of(const Shape& out_shape, std::int64_t in_row_stride) {
  std::int64_t ffn = out_shape.back();
  return {ffn == 0 ? 0 : shape_numel(out_shape) / ffn, ffn, in_row_stride};
}

template <typename T>
host::Acc<T> silu(host::Acc<T> g) {
  return g / (host::Acc<T>(1) + std::exp(-g));
}

template <typename T>
void forward_cpu(const T* gate, const T* up, T* out, const cuda::SwigluLayout& l) {
  for (std::int64_t r = 0; r < l.rows; ++r)
    for (std::int64_t c = 0; c < l.ffn; ++c) {
      std::int64_t at = r * l.in_row_stride + c;
      out[r * l.ffn + c] = host::store<T>(host::round<T>(silu<T>(host::load(gate[at]))) * host::load(up[at]));
    }
}

// `out`, when not null, takes forward_cpu's output again.
template <typename T>
void backward_cpu(const T* grad_out, const T* gate, const T* up, T* grad_gate, T* grad_up, T* out,
                  const cuda::SwigluLayout& l) {
  using A = host::Acc<T>;
  for (std::int64_t r = 0; r < l.rows; ++r)
    for (std::int64_t c = 0; c < l.ffn; ++c) {
      std::int64_t at = r * l.in_row_stride + c;
      A g = host::load(gate[at]), u = host::load(up[at]), dy = host::load(grad_out[r * l.ffn + c]);
      A s = A(1) / (A(1) + std::exp(-g));
      A grad_silu = host::round<T>(dy * u);
      A rounded_silu = host::round<T>(silu<T>(g));
      grad_up[at] = host::store<T>(dy * rounded_silu);
      grad_gate[at] = host::store<T>(grad_silu * (s * (A(1) + g * (A(1) - s))));
      if (out != nullptr) out[r * l.ffn + c] = host::store<T>(rounded_silu * u);
    }
}

// gate/up point at the first gate/up element; the outputs share their layout.
Tensor forward(const char* op, const Tensor& source, const void* gate, const void* up, const Shape& out_shape,
               std::int64_t in_row_stride) {
  Tensor out = Tensor::empty(out_shape, source.dtype(), source.device());
  cuda::SwigluLayout layout = layout_of(out_shape, in_row_stride);
  if (source.device().is_cuda()) {
    cuda::swiglu_forward(gate, up, out.data_ptr(), source.dtype(), layout, current_stream());
    return out;
  }
  host::dispatch_float(source.dtype(), op, [&]<typename T>() {
    forward_cpu<T>(static_cast<const T*>(gate), static_cast<const T*>(up), out.data<T>(), layout);
  });
  return out;
}

// `out`: null, or where the forward's output is written again.
void backward(const char* op, const Tensor& grad_out, const void* gate, const void* up, void* grad_gate, void* grad_up,
              void* out, std::int64_t in_row_stride) {
  cuda::SwigluLayout layout = layout_of(grad_out.shape(), in_row_stride);
  if (grad_out.device().is_cuda()) {
    cuda::swiglu_backward(grad_out.data_ptr(), gate, up, grad_gate, grad_up, out, grad_out.dtype(), layout,
                          current_stream());
    return;
  }
  host::dispatch_float(grad_out.dtype(), op, [&]<typename T>() {
    backward_cpu<T>(grad_out.data<T>(), static_cast<const T*>(gate), static_cast<const T*>(up),
                    static_cast<T*>(grad_gate), static_cast<T*>(grad_up), static_cast<T*>(out), layout);
  });
}

void check_fused(const char* op, const Tensor& gate_up) {
  check_float_on_device(op, {"gate_up", &gate_up});
  check_has_last_dim(op, {"gate_up", &gate_up});
  ZT_REQUIRE(gate_up.size(-1) % 2 == 0, std::string(op) + ": gate_up has shape " + shape_str(gate_up.shape()) +
                                            "; its last dimension must be even ([gate | up])");
}

Shape half_last_dim(const Tensor& gate_up) {
  Shape shape = gate_up.shape();
  shape.back() /= 2;
  return shape;
}

// The fused backward, with the forward's output written again when `recompute`.
SwigluRecomputed fused_backward(const char* op, const Tensor& grad_out_in, const Tensor& gate_up_in, bool recompute) {
  check_fused(op, gate_up_in);
  check_same_device(op, {{"gate_up", &gate_up_in}, {"grad_out", &grad_out_in}});
  check_same_dtype(op, {{"gate_up", &gate_up_in}, {"grad_out", &grad_out_in}});
  ZT_REQUIRE(grad_out_in.shape() == half_last_dim(gate_up_in),
             std::string(op) + ": grad_out has shape " + shape_str(grad_out_in.shape()) + " but gate_up has shape " +
                 shape_str(gate_up_in.shape()) + "; grad_out must be gate_up's shape with the last dimension halved");
  Tensor grad_out = grad_out_in.contiguous(), gate_up = gate_up_in.contiguous();
  SwigluRecomputed result{Tensor::empty(gate_up.shape(), gate_up.dtype(), gate_up.device()),
                          recompute ? Tensor::empty(grad_out.shape(), gate_up.dtype(), gate_up.device()) : Tensor()};
  std::int64_t ffn = gate_up.size(-1) / 2;
  std::size_t up_bytes = static_cast<std::size_t>(ffn) * dtype_size(gate_up.dtype());
  auto* base = static_cast<const char*>(gate_up.data_ptr());
  auto* grad_base = static_cast<char*>(result.grad_gate_up.data_ptr());
  backward(op, grad_out, base, base + up_bytes, grad_base, grad_base + up_bytes,
           recompute ? result.out.data_ptr() : nullptr, 2 * ffn);
  return result;
}

}  // namespace

Tensor swiglu_forward(const Tensor& gate_in, const Tensor& up_in) {
  const char* op = "swiglu_forward";
  check_same_device(op, {{"gate", &gate_in}, {"up", &up_in}});
  check_same_dtype(op, {{"gate", &gate_in}, {"up", &up_in}});
  check_float_on_device(op, {"gate", &gate_in});
  check_has_last_dim(op, {"gate", &gate_in});
  check_same_shape(op, {"gate", &gate_in}, {"up", &up_in});
  Tensor gate = gate_in.contiguous(), up = up_in.contiguous();
  return forward(op, gate, gate.data_ptr(), up.data_ptr(), gate.shape(), gate.size(-1));
}

SwigluGrads swiglu_backward(const Tensor& grad_out_in, const Tensor& gate_in, const Tensor& up_in) {
  const char* op = "swiglu_backward";
  check_same_device(op, {{"gate", &gate_in}, {"up", &up_in}, {"grad_out", &grad_out_in}});
  check_same_dtype(op, {{"gate", &gate_in}, {"up", &up_in}, {"grad_out", &grad_out_in}});
  check_float_on_device(op, {"gate", &gate_in});
  check_has_last_dim(op, {"gate", &gate_in});
  check_same_shape(op, {"gate", &gate_in}, {"up", &up_in});
  check_same_shape(op, {"grad_out", &grad_out_in}, {"gate", &gate_in});
  Tensor grad_out = grad_out_in.contiguous(), gate = gate_in.contiguous(), up = up_in.contiguous();
  SwigluGrads grads{Tensor::empty(gate.shape(), gate.dtype(), gate.device()),
                    Tensor::empty(up.shape(), up.dtype(), up.device())};
  backward(op, grad_out, gate.data_ptr(), up.data_ptr(), grads.grad_gate.data_ptr(), grads.grad_up.data_ptr(), nullptr,
           gate.size(-1));
  return grads;
}

Tensor swiglu_fused_forward(const Tensor& gate_up_in) {
  const char* op = "swiglu_fused_forward";
  check_fused(op, gate_up_in);
  Tensor gate_up = gate_up_in.contiguous();
  std::int64_t ffn = gate_up.size(-1) / 2;
  auto* base = static_cast<const char*>(gate_up.data_ptr());
  return forward(op, gate_up, base, base + ffn * dtype_size(gate_up.dtype()), half_last_dim(gate_up), 2 * ffn);
}

Tensor swiglu_fused_backward(const Tensor& grad_out, const Tensor& gate_up) {
  return fused_backward("swiglu_fused_backward", grad_out, gate_up, false).grad_gate_up;
}

SwigluRecomputed swiglu_fused_backward_recomputing(const Tensor& grad_out, const Tensor& gate_up) {
  return fused_backward("swiglu_fused_backward_recomputing", grad_out, gate_up, true);
}

}  // namespace zt::ops
