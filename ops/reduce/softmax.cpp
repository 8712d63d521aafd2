#include "ops/reduce/softmax.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "cuda/reduce/softmax.cuh"
#include "ops/op_checks.h"
#include "runtime/error.h"
#include "runtime/streams/current_stream.h"

namespace zt::ops {
namespace {

void check_input(const char* op, NamedTensor x) {
  check_float_on_device(op, x);
  ZT_REQUIRE(x.second->dim() >= 1, std::string(op) + ": " + x.first + " must have at least one dimension, got shape " +
                                       shape_str(x.second->shape()));
}

// The CPU computes in float64 and rounds once to the dtype.
template <typename Row>
Tensor cpu_rowwise(const Tensor& like, std::vector<const Tensor*> inputs, Row&& row) {
  std::int64_t cols = like.size(-1), rows = cols == 0 ? 0 : like.numel() / cols;
  std::vector<Tensor> values;
  for (const Tensor* t : inputs) values.push_back(t->to(DType::kF64).contiguous());
  Tensor out = Tensor::empty(like.shape(), DType::kF64);
  for (std::int64_t r = 0; r < rows; ++r) {
    std::vector<const double*> in;
    for (const Tensor& v : values) in.push_back(v.data<double>() + r * cols);
    row(in, out.data<double>() + r * cols, cols);
  }
  return out.to(like.dtype());
}

void softmax_row(const std::vector<const double*>& in, double* out, std::int64_t cols) {
  const double* x = in[0];
  double max = *std::max_element(x, x + cols), sum = 0.0;
  for (std::int64_t j = 0; j < cols; ++j) sum += std::exp(x[j] - max);
  for (std::int64_t j = 0; j < cols; ++j) out[j] = std::exp(x[j] - max) / sum;
}

void softmax_backward_row(const std::vector<const double*>& in, double* out, std::int64_t cols) {
  const double *dy = in[0], *y = in[1];
  double dot = 0.0;
  for (std::int64_t j = 0; j < cols; ++j) dot += dy[j] * y[j];
  for (std::int64_t j = 0; j < cols; ++j) out[j] = y[j] * (dy[j] - dot);
}

}  // namespace

Tensor softmax_forward(const Tensor& x) {
  const char* op = "softmax";
  Device device = check_same_device(op, {{"x", &x}});
  check_input(op, {"x", &x});
  if (!device.is_cuda()) return cpu_rowwise(x, {&x}, softmax_row);
  Tensor in = x.contiguous();
  Tensor y = Tensor::empty(x.shape(), x.dtype(), device);
  std::int64_t cols = x.size(-1), rows = cols == 0 ? 0 : x.numel() / cols;
  DeviceGuard guard(device.index);
  cuda::softmax_forward(in.data_ptr(), y.data_ptr(), x.dtype(), rows, cols, current_stream());
  return y;
}

Tensor softmax_backward(const Tensor& grad_y, const Tensor& y) {
  const char* op = "softmax_backward";
  Device device = check_same_device(op, {{"grad_y", &grad_y}, {"y", &y}});
  check_same_dtype(op, {{"grad_y", &grad_y}, {"y", &y}});
  check_same_shape(op, {"grad_y", &grad_y}, {"y", &y});
  check_input(op, {"y", &y});
  if (!device.is_cuda()) return cpu_rowwise(y, {&grad_y, &y}, softmax_backward_row);
  Tensor dy = grad_y.contiguous(), out = y.contiguous();
  Tensor dx = Tensor::empty(y.shape(), y.dtype(), device);
  std::int64_t cols = y.size(-1), rows = cols == 0 ? 0 : y.numel() / cols;
  DeviceGuard guard(device.index);
  cuda::softmax_backward(dy.data_ptr(), out.data_ptr(), dx.data_ptr(), y.dtype(), rows, cols, current_stream());
  return dx;
}

}  // namespace zt::ops
