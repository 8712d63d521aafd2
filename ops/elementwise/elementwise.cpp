#include "ops/elementwise/elementwise.h"

#include <algorithm>
#include <string>

#include "cuda/elementwise/elementwise.cuh"
#include "ops/elementwise/elementwise_host.h"
#include "ops/op_checks.h"
#include "ops/reduce/reduce.h"
#include "runtime/error.h"
#include "runtime/streams/current_stream.h"

namespace zt::ops {
namespace {

bool is_trailing_part(const Shape& part, const Shape& whole) {
  return part.size() <= whole.size() && std::equal(part.begin(), part.end(), whole.end() - part.size());
}

void check_binary(const char* op, const Tensor& a, const Tensor& b) {
  check_same_device(op, {{"a", &a}, {"b", &b}});
  check_same_dtype(op, {{"a", &a}, {"b", &b}});
  check_float_on_device(op, {"a", &a});
  ZT_REQUIRE(is_trailing_part(b.shape(), a.shape()), std::string(op) + ": a has shape " + shape_str(a.shape()) +
                                                         " but b has shape " + shape_str(b.shape()) +
                                                         "; b must equal a's shape or its trailing dimensions");
}

template <typename T>
void binary_cpu(cuda::BinaryOp op, const T* a, const T* b, T* out, std::int64_t n, std::int64_t b_numel) {
  for (std::int64_t i = 0; i < n; ++i) {
    host::Acc<T> x = host::load(a[i]), y = host::load(b[i % b_numel]);
    host::Acc<T> r = op == cuda::BinaryOp::kAdd ? x + y : (op == cuda::BinaryOp::kSub ? x - y : x * y);
    out[i] = host::store<T>(r);
  }
}

Tensor binary(const char* op, cuda::BinaryOp kind, const Tensor& a_in, const Tensor& b_in) {
  check_binary(op, a_in, b_in);
  Tensor a = a_in.contiguous(), b = b_in.contiguous();
  Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
  std::int64_t n = a.numel(), b_numel = b.numel();
  if (n == 0) return out;
  if (a.device().is_cuda()) {
    cuda::binary_elementwise(kind, a.data_ptr(), b.data_ptr(), out.data_ptr(), a.dtype(), n, b_numel, current_stream());
    return out;
  }
  host::dispatch_float(a.dtype(), op,
                       [&]<typename T>() { binary_cpu<T>(kind, a.data<T>(), b.data<T>(), out.data<T>(), n, b_numel); });
  return out;
}

void check_grad(const char* op, const Tensor& grad_out) {
  ZT_REQUIRE(grad_out.defined(), std::string(op) + ": grad_out is an undefined tensor");
  check_float_on_device(op, {"grad_out", &grad_out});
}

void check_b_shape(const char* op, const Tensor& grad_out, const Shape& b_shape) {
  ZT_REQUIRE(is_trailing_part(b_shape, grad_out.shape()),
             std::string(op) + ": grad_out has shape " + shape_str(grad_out.shape()) + " but b has shape " +
                 shape_str(b_shape) + "; b must equal the output's shape or its trailing dimensions");
}

}  // namespace

Tensor add_forward(const Tensor& a, const Tensor& b) { return binary("add_forward", cuda::BinaryOp::kAdd, a, b); }
Tensor sub_forward(const Tensor& a, const Tensor& b) { return binary("sub_forward", cuda::BinaryOp::kSub, a, b); }
Tensor mul_forward(const Tensor& a, const Tensor& b) { return binary("mul_forward", cuda::BinaryOp::kMul, a, b); }

Tensor residual_add_forward(const Tensor& x, const Tensor& residual) {
  const char* op = "residual_add_forward";
  check_same_device(op, {{"x", &x}, {"residual", &residual}});
  check_same_shape(op, {"x", &x}, {"residual", &residual});
  return binary(op, cuda::BinaryOp::kAdd, x, residual);
}

Tensor scale_forward(const Tensor& x_in, double factor) {
  const char* op = "scale_forward";
  ZT_REQUIRE(x_in.defined(), std::string(op) + ": x is an undefined tensor");
  check_float_on_device(op, {"x", &x_in});
  Tensor x = x_in.contiguous();
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (x.device().is_cuda()) {
    cuda::scale_elementwise(x.data_ptr(), out.data_ptr(), x.dtype(), x.numel(), static_cast<float>(factor),
                            current_stream());
    return out;
  }
  host::dispatch_float(x.dtype(), op, [&]<typename T>() {
    const T* in = x.data<T>();
    T* dst = out.data<T>();
    auto f = static_cast<host::Acc<T>>(factor);
    for (std::int64_t i = 0; i < x.numel(); ++i) dst[i] = host::store<T>(host::load(in[i]) * f);
  });
  return out;
}

Tensor cast_forward(const Tensor& x, DType dtype) {
  ZT_REQUIRE(x.defined(), "cast_forward: x is an undefined tensor");
  return x.to(dtype);
}

BinaryGrads add_backward(const Tensor& grad_out, const Shape& b_shape) {
  const char* op = "add_backward";
  check_grad(op, grad_out);
  check_b_shape(op, grad_out, b_shape);
  return {grad_out, sum_to_trailing(grad_out, b_shape)};
}

BinaryGrads sub_backward(const Tensor& grad_out, const Shape& b_shape) {
  const char* op = "sub_backward";
  check_grad(op, grad_out);
  check_b_shape(op, grad_out, b_shape);
  return {grad_out, scale_forward(sum_to_trailing(grad_out, b_shape), -1.0)};
}

BinaryGrads mul_backward(const Tensor& grad_out, const Tensor& a, const Tensor& b) {
  const char* op = "mul_backward";
  check_grad(op, grad_out);
  check_binary(op, a, b);
  check_same_device(op, {{"a", &a}, {"grad_out", &grad_out}});
  check_same_dtype(op, {{"a", &a}, {"grad_out", &grad_out}});
  check_same_shape(op, {"grad_out", &grad_out}, {"a", &a});
  // As torch: grad_out * a is rounded to the dtype per element before the broadcast sum.
  return {mul_forward(grad_out, b), sum_to_trailing(mul_forward(grad_out, a), b.shape())};
}

Tensor scale_backward(const Tensor& grad_out, double factor) {
  check_grad("scale_backward", grad_out);
  return scale_forward(grad_out, factor);
}

BinaryGrads residual_add_backward(const Tensor& grad_out) {
  check_grad("residual_add_backward", grad_out);
  return {grad_out, grad_out};
}

Tensor cast_backward(const Tensor& grad_out, DType input_dtype) {
  const char* op = "cast_backward";
  ZT_REQUIRE(grad_out.defined(), std::string(op) + ": grad_out is an undefined tensor");
  check_floating(op, {"grad_out", &grad_out});
  ZT_REQUIRE(
      is_floating(input_dtype),
      std::string(op) + ": the forward's input must be floating to have a gradient, got " + dtype_name(input_dtype));
  return grad_out.to(input_dtype);
}

}  // namespace zt::ops
