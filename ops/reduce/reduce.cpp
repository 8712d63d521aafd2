#include "ops/reduce/reduce.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "cuda/reduce/reduce.cuh"
#include "ops/elementwise/elementwise.h"
#include "ops/elementwise/elementwise_host.h"
#include "ops/op_checks.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/streams/current_stream.h"

namespace zt::ops {
namespace {

void check_input(const char* op, const Tensor& x) {
  ZT_REQUIRE(x.defined(), std::string(op) + ": x is an undefined tensor");
  check_float_on_device(op, {"x", &x});
}

std::int64_t wrap_dim(const char* op, const Shape& shape, std::int64_t dim) {
  auto ndim = static_cast<std::int64_t>(shape.size());
  ZT_REQUIRE(dim >= -ndim && dim < ndim,
             std::string(op) + ": dim " + std::to_string(dim) + " is out of range for shape " + shape_str(shape));
  return dim < 0 ? dim + ndim : dim;
}

// x seen as [outer, extent, inner] around dim.
struct Split {
  std::int64_t outer = 1, extent = 1, inner = 1;
};

Split split_at(const Shape& shape, std::int64_t dim) {
  Split s;
  for (std::int64_t d = 0; d < static_cast<std::int64_t>(shape.size()); ++d) {
    if (d < dim)
      s.outer *= shape[d];
    else if (d == dim)
      s.extent = shape[d];
    else
      s.inner *= shape[d];
  }
  return s;
}

Shape reduced_shape(const Shape& shape, std::int64_t dim, bool keepdim) {
  Shape out = shape;
  if (keepdim)
    out[dim] = 1;
  else
    out.erase(out.begin() + dim);
  return out;
}

template <typename T>
void sum_cpu(const T* x, T* out, const Split& s, double multiplier) {
  for (std::int64_t o = 0; o < s.outer; ++o)
    for (std::int64_t i = 0; i < s.inner; ++i) {
      double sum = 0.0;
      for (std::int64_t e = 0; e < s.extent; ++e) sum += to_double(x[(o * s.extent + e) * s.inner + i]);
      out[o * s.inner + i] = host::store<T>(static_cast<host::Acc<T>>(sum * multiplier));
    }
}

// The reduction over the middle of s into a new tensor of out_shape.
Tensor reduce(const char* op, const Tensor& x_in, const Split& s, const Shape& out_shape, double multiplier,
              bool whole_tensor) {
  Tensor x = x_in.contiguous();
  Tensor out = Tensor::empty(out_shape, x.dtype(), x.device());
  if (x.device().is_cuda()) {
    auto factor = static_cast<float>(multiplier);
    if (whole_tensor)
      cuda::sum_all(x.data_ptr(), out.data_ptr(), x.dtype(), x.numel(), factor, current_stream());
    else
      cuda::sum_dim(x.data_ptr(), out.data_ptr(), x.dtype(), s.outer, s.extent, s.inner, factor, current_stream());
    return out;
  }
  host::dispatch_float(x.dtype(), op, [&]<typename T>() { sum_cpu<T>(x.data<T>(), out.data<T>(), s, multiplier); });
  return out;
}

Tensor reduce_dim(const char* op, const Tensor& x, std::int64_t dim, bool keepdim, bool mean) {
  check_input(op, x);
  dim = wrap_dim(op, x.shape(), dim);
  Split s = split_at(x.shape(), dim);
  return reduce(op, x, s, reduced_shape(x.shape(), dim, keepdim), mean ? 1.0 / static_cast<double>(s.extent) : 1.0,
                false);
}

Tensor reduce_all(const char* op, const Tensor& x, bool mean) {
  check_input(op, x);
  Split s{1, x.numel(), 1};
  return reduce(op, x, s, {}, mean ? 1.0 / static_cast<double>(x.numel()) : 1.0, true);
}

// grad_out broadcast back to input_shape, times multiplier.
Tensor broadcast_back(const Tensor& grad_out, const Shape& input_shape, const Shape& keepdim_shape, double multiplier) {
  Tensor g = multiplier == 1.0 ? grad_out : scale_forward(grad_out, multiplier);
  return g.reshape(keepdim_shape).expand(input_shape).contiguous();
}

Tensor backward_all(const char* op, const Tensor& grad_out, const Shape& input_shape, bool mean) {
  check_input(op, grad_out);
  ZT_REQUIRE(grad_out.numel() == 1, std::string(op) +
                                        ": grad_out must hold one element (the forward's output), got shape " +
                                        shape_str(grad_out.shape()));
  double multiplier = mean ? 1.0 / static_cast<double>(shape_numel(input_shape)) : 1.0;
  return broadcast_back(grad_out, input_shape, Shape(input_shape.size(), 1), multiplier);
}

Tensor backward_dim(const char* op, const Tensor& grad_out, const Shape& input_shape, std::int64_t dim, bool keepdim,
                    bool mean) {
  check_input(op, grad_out);
  dim = wrap_dim(op, input_shape, dim);
  Shape expected = reduced_shape(input_shape, dim, keepdim);
  ZT_REQUIRE(grad_out.shape() == expected, std::string(op) + ": grad_out has shape " + shape_str(grad_out.shape()) +
                                               " but reducing dim " + std::to_string(dim) + " of input shape " +
                                               shape_str(input_shape) + " gives " + shape_str(expected));
  double multiplier = mean ? 1.0 / static_cast<double>(input_shape[dim]) : 1.0;
  return broadcast_back(grad_out, input_shape, reduced_shape(input_shape, dim, true), multiplier);
}

// The first maximum of each row in argmax_rows' order: a NaN beats any number, ties keep the
// earlier column.
template <typename T>
void argmax_cpu(const T* x, std::int64_t* out, std::int64_t rows, std::int64_t cols, std::int64_t row_stride) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* row = x + r * row_stride;
    std::int64_t best = 0;
    double best_value = to_double(row[0]);
    for (std::int64_t c = 1; c < cols && !std::isnan(best_value); ++c) {
      const double value = to_double(row[c]);
      if (std::isnan(value) || value > best_value) best = c, best_value = value;
    }
    out[r] = best;
  }
}

}  // namespace

Tensor sum_forward(const Tensor& x) { return reduce_all("sum_forward", x, false); }
Tensor mean_forward(const Tensor& x) { return reduce_all("mean_forward", x, true); }

Tensor sum_dim_forward(const Tensor& x, std::int64_t dim, bool keepdim) {
  return reduce_dim("sum_dim_forward", x, dim, keepdim, false);
}
Tensor mean_dim_forward(const Tensor& x, std::int64_t dim, bool keepdim) {
  return reduce_dim("mean_dim_forward", x, dim, keepdim, true);
}

Tensor sum_backward(const Tensor& grad_out, const Shape& input_shape) {
  return backward_all("sum_backward", grad_out, input_shape, false);
}
Tensor mean_backward(const Tensor& grad_out, const Shape& input_shape) {
  return backward_all("mean_backward", grad_out, input_shape, true);
}

Tensor sum_dim_backward(const Tensor& grad_out, const Shape& input_shape, std::int64_t dim, bool keepdim) {
  return backward_dim("sum_dim_backward", grad_out, input_shape, dim, keepdim, false);
}
Tensor mean_dim_backward(const Tensor& grad_out, const Shape& input_shape, std::int64_t dim, bool keepdim) {
  return backward_dim("mean_dim_backward", grad_out, input_shape, dim, keepdim, true);
}

Tensor sum_to_trailing(const Tensor& x, const Shape& trailing_shape) {
  const char* op = "sum_to_trailing";
  check_input(op, x);
  std::size_t lead = x.shape().size() - std::min(x.shape().size(), trailing_shape.size());
  ZT_REQUIRE(trailing_shape.size() <= x.shape().size() &&
                 std::equal(trailing_shape.begin(), trailing_shape.end(), x.shape().begin() + lead),
             std::string(op) + ": shape " + shape_str(trailing_shape) + " is not a trailing part of x's shape " +
                 shape_str(x.shape()));
  if (lead == 0) return x;
  Split s{1, shape_numel(Shape(x.shape().begin(), x.shape().begin() + lead)), shape_numel(trailing_shape)};
  return reduce(op, x, s, trailing_shape, 1.0, false);
}

Tensor argmax_rows(const Tensor& x_in) {
  const char* op = "argmax_rows";
  ZT_REQUIRE(x_in.defined(), std::string(op) + ": x is an undefined tensor");
  check_floating(op, {"x", &x_in});
  check_dim(op, {"x", &x_in}, 2);
  ZT_REQUIRE(x_in.size(1) >= 1 || x_in.size(0) == 0, std::string(op) + ": x has shape " + shape_str(x_in.shape()) +
                                                         "; a row needs at least one column to have a largest value");
  ZT_REQUIRE(x_in.size(1) < std::numeric_limits<int>::max(),
             std::string(op) + ": x has shape " + shape_str(x_in.shape()) + "; at most " +
                 std::to_string(std::numeric_limits<int>::max() - 1) + " columns");
  const Tensor x = x_in.size(1) <= 1 || x_in.stride(1) == 1 ? x_in : x_in.contiguous();
  const std::int64_t rows = x.size(0), cols = x.size(1);
  Tensor out = Tensor::empty({rows}, DType::kI64, x.device());
  if (rows == 0) return out;
  const std::int64_t row_stride = rows == 1 ? cols : x.stride(0);
  if (x.device().is_cuda()) {
    DeviceGuard guard(x.device().index);
    cuda::argmax_rows(x.data_ptr(), out.data<std::int64_t>(), x.dtype(), rows, cols, row_stride, current_stream());
    return out;
  }
  host::dispatch_float(x.dtype(), op, [&]<typename T>() {
    argmax_cpu<T>(x.data<T>(), out.data<std::int64_t>(), rows, cols, row_stride);
  });
  return out;
}

}  // namespace zt::ops
