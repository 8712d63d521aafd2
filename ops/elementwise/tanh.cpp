#include "ops/elementwise/tanh.h"

#include <cmath>
#include <string>

#include "cuda/elementwise/tanh.cuh"
#include "ops/elementwise/elementwise_host.h"
#include "ops/op_checks.h"
#include "runtime/error.h"
#include "runtime/streams/current_stream.h"

namespace zt::ops {
namespace {

void check_input(const char* op, NamedTensor t) {
  ZT_REQUIRE(t.second->defined(), std::string(op) + ": " + t.first + " is an undefined tensor");
  check_float_on_device(op, t);
}

}  // namespace

Tensor tanh_forward(const Tensor& x_in) {
  const char* op = "tanh_forward";
  check_input(op, {"x", &x_in});
  Tensor x = x_in.contiguous();
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (x.device().is_cuda()) {
    cuda::tanh_forward(x.data_ptr(), out.data_ptr(), x.dtype(), x.numel(), current_stream());
    return out;
  }
  host::dispatch_float(x.dtype(), op, [&]<typename T>() {
    const T* in = x.data<T>();
    T* dst = out.data<T>();
    for (std::int64_t i = 0; i < x.numel(); ++i) dst[i] = host::store<T>(std::tanh(host::load(in[i])));
  });
  return out;
}

Tensor tanh_backward(const Tensor& grad_in, const Tensor& out_in) {
  const char* op = "tanh_backward";
  check_input(op, {"grad_out", &grad_in});
  check_input(op, {"out", &out_in});
  check_same_device(op, {{"grad_out", &grad_in}, {"out", &out_in}});
  check_same_dtype(op, {{"grad_out", &grad_in}, {"out", &out_in}});
  check_same_shape(op, {"grad_out", &grad_in}, {"out", &out_in});
  Tensor grad = grad_in.contiguous(), out = out_in.contiguous();
  Tensor result = Tensor::empty(out.shape(), out.dtype(), out.device());
  if (out.device().is_cuda()) {
    cuda::tanh_backward(grad.data_ptr(), out.data_ptr(), result.data_ptr(), out.dtype(), out.numel(), current_stream());
    return result;
  }
  host::dispatch_float(out.dtype(), op, [&]<typename T>() {
    const T* g = grad.data<T>();
    const T* y = out.data<T>();
    T* dst = result.data<T>();
    for (std::int64_t i = 0; i < out.numel(); ++i) {
      host::Acc<T> value = host::load(y[i]);
      dst[i] = host::store<T>(host::load(g[i]) * (host::Acc<T>(1) - value * value));
    }
  });
  return result;
}

}  // namespace zt::ops
