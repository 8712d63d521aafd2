#include "ops/norm/rmsnorm.h"

#include <cmath>
#include <string>
#include <vector>

#include "cuda/norm/rmsnorm.cuh"
#include "ops/elementwise/elementwise_host.h"
#include "ops/op_checks.h"
#include "runtime/error.h"
#include "runtime/streams/current_stream.h"

namespace zt::ops {
namespace {

DType rstd_dtype(DType x_dtype) { return x_dtype == DType::kF64 ? DType::kF64 : DType::kF32; }

Shape row_shape(const Tensor& x) { return Shape(x.shape().begin(), x.shape().end() - 1); }

void check_inputs(const char* op, const Tensor& x, const Tensor& weight) {
  check_same_device(op, {{"x", &x}, {"weight", &weight}});
  check_same_dtype(op, {{"x", &x}, {"weight", &weight}});
  check_float_on_device(op, {"x", &x});
  ZT_REQUIRE(x.dim() >= 1, std::string(op) + ": x must have at least one dimension, got shape " + shape_str(x.shape()));
  check_dim(op, {"weight", &weight}, 1);
  check_size(op, {"weight", &weight}, 0, x.size(-1), "the hidden size, x's last dimension");
}

template <typename T>
host::Acc<T> normalized(host::Acc<T> x, host::Acc<T> rstd, RmsNormStyle style) {
  host::Acc<T> n = x * rstd;
  return style == RmsNormStyle::kQwen ? host::round<T>(n) : n;
}

template <typename T>
void forward_cpu(const T* x, const T* w, T* y, host::Acc<T>* rstd, std::int64_t rows, std::int64_t hidden, float eps,
                 RmsNormStyle style) {
  using A = host::Acc<T>;
  for (std::int64_t row = 0; row < rows; ++row) {
    const T* x_row = x + row * hidden;
    A squares = 0;
    for (std::int64_t h = 0; h < hidden; ++h) squares += host::load(x_row[h]) * host::load(x_row[h]);
    A r = A(1) / std::sqrt(squares / static_cast<A>(hidden) + static_cast<A>(eps));
    rstd[row] = r;
    for (std::int64_t h = 0; h < hidden; ++h)
      y[row * hidden + h] = host::store<T>(host::load(w[h]) * normalized<T>(host::load(x_row[h]), r, style));
  }
}

template <typename T>
void add_cpu(const T* a, const T* b, T* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = host::store<T>(host::load(a[i]) + host::load(b[i]));
}

template <typename T>
void backward_cpu(const T* grad_y, const T* x, const T* w, const host::Acc<T>* rstd, T* grad_x, T* grad_w,
                  std::int64_t rows, std::int64_t hidden, RmsNormStyle style) {
  using A = host::Acc<T>;
  std::vector<A> dw(static_cast<std::size_t>(hidden), A(0));
  for (std::int64_t row = 0; row < rows; ++row) {
    const T* g_row = grad_y + row * hidden;
    const T* x_row = x + row * hidden;
    A r = rstd[row], dot = 0;
    for (std::int64_t h = 0; h < hidden; ++h) dot += host::load(g_row[h]) * host::load(w[h]) * host::load(x_row[h]);
    A coefficient = dot * r * r * r / static_cast<A>(hidden);
    for (std::int64_t h = 0; h < hidden; ++h) {
      A g = host::load(g_row[h]), xv = host::load(x_row[h]);
      grad_x[row * hidden + h] = host::store<T>(r * g * host::load(w[h]) - coefficient * xv);
      dw[h] += g * normalized<T>(xv, r, style);
    }
  }
  for (std::int64_t h = 0; h < hidden; ++h) grad_w[h] = host::store<T>(dw[h]);
}

struct ForwardResult {
  Tensor y, sum, rstd;
};

// residual undefined: plain RMSNorm of x; defined: RMSNorm of sum = x + residual.
ForwardResult forward(const char* op, const Tensor& x_in, const Tensor& residual_in, const Tensor& weight_in, float eps,
                      RmsNormStyle style) {
  check_inputs(op, x_in, weight_in);
  Tensor x = x_in.contiguous(), weight = weight_in.contiguous(), residual;
  if (residual_in.defined()) {
    check_same_device(op, {{"x", &x_in}, {"residual", &residual_in}});
    check_same_dtype(op, {{"x", &x_in}, {"residual", &residual_in}});
    check_same_shape(op, {"residual", &residual_in}, {"x", &x_in});
    residual = residual_in.contiguous();
  }
  std::int64_t hidden = x.size(-1), rows = hidden == 0 ? 0 : x.numel() / hidden;
  ForwardResult out{Tensor::empty(x.shape(), x.dtype(), x.device()), Tensor(),
                    Tensor::empty(row_shape(x), rstd_dtype(x.dtype()), x.device())};
  if (residual.defined()) out.sum = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (x.device().is_cuda()) {
    cuda::RmsNormForwardArgs args;
    args.x = x.data_ptr();
    args.residual = residual.defined() ? residual.data_ptr() : nullptr;
    args.weight = weight.data_ptr();
    args.y = out.y.data_ptr();
    args.sum = out.sum.defined() ? out.sum.data_ptr() : nullptr;
    args.rstd = out.rstd.data<float>();
    cuda::rmsnorm_forward(args, x.dtype(), rows, hidden, eps, style == RmsNormStyle::kQwen, current_stream());
    return out;
  }
  host::dispatch_float(x.dtype(), op, [&]<typename T>() {
    const T* source = x.data<T>();
    if (residual.defined()) {
      add_cpu<T>(x.data<T>(), residual.data<T>(), out.sum.data<T>(), x.numel());
      source = out.sum.data<T>();
    }
    forward_cpu<T>(source, weight.data<T>(), out.y.data<T>(), out.rstd.data<host::Acc<T>>(), rows, hidden, eps, style);
  });
  return out;
}

void check_saved_rstd(const char* op, const Tensor& x, const Tensor& saved_rstd) {
  ZT_REQUIRE(saved_rstd.shape() == row_shape(x) && saved_rstd.dtype() == rstd_dtype(x.dtype()),
             std::string(op) + ": saved_rstd must be the forward's rstd, " + dtype_name(rstd_dtype(x.dtype())) +
                 " of shape " + shape_str(row_shape(x)) + " for an input of shape " + shape_str(x.shape()) + ", got " +
                 dtype_name(saved_rstd.dtype()) + " of shape " + shape_str(saved_rstd.shape()));
}

// grad_sum undefined: plain RMSNorm backward; defined: added to dx (the fused residual).
RmsNormGrads backward(const char* op, const Tensor& grad_y_in, const Tensor& grad_sum_in, const Tensor& x_in,
                      const Tensor& weight_in, const Tensor& saved_rstd_in, RmsNormStyle style) {
  check_inputs(op, x_in, weight_in);
  check_same_device(op, {{"x", &x_in}, {"grad_y", &grad_y_in}, {"saved_rstd", &saved_rstd_in}});
  check_same_dtype(op, {{"x", &x_in}, {"grad_y", &grad_y_in}});
  check_same_shape(op, {"grad_y", &grad_y_in}, {"x", &x_in});
  check_saved_rstd(op, x_in, saved_rstd_in);
  Tensor grad_y = grad_y_in.contiguous(), x = x_in.contiguous(), weight = weight_in.contiguous(), grad_sum;
  if (grad_sum_in.defined()) {
    check_same_device(op, {{"x", &x_in}, {"grad_sum", &grad_sum_in}});
    check_same_dtype(op, {{"x", &x_in}, {"grad_sum", &grad_sum_in}});
    check_same_shape(op, {"grad_sum", &grad_sum_in}, {"x", &x_in});
    grad_sum = grad_sum_in.contiguous();
  }
  Tensor rstd = saved_rstd_in.contiguous();
  std::int64_t hidden = x.size(-1), rows = hidden == 0 ? 0 : x.numel() / hidden;
  RmsNormGrads grads{Tensor::empty(x.shape(), x.dtype(), x.device()),
                     Tensor::empty(weight.shape(), weight.dtype(), x.device())};
  if (x.device().is_cuda()) {
    cuda::RmsNormBackwardArgs args;
    args.grad_y = grad_y.data_ptr();
    args.grad_sum = grad_sum.defined() ? grad_sum.data_ptr() : nullptr;
    args.x = x.data_ptr();
    args.weight = weight.data_ptr();
    args.rstd = rstd.data<float>();
    args.grad_x = grads.grad_x.data_ptr();
    args.grad_weight = grads.grad_weight.data_ptr();
    cuda::rmsnorm_backward(args, x.dtype(), rows, hidden, style == RmsNormStyle::kQwen, current_stream());
    return grads;
  }
  host::dispatch_float(x.dtype(), op, [&]<typename T>() {
    backward_cpu<T>(grad_y.data<T>(), x.data<T>(), weight.data<T>(), rstd.data<host::Acc<T>>(), grads.grad_x.data<T>(),
                    grads.grad_weight.data<T>(), rows, hidden, style);
    if (grad_sum.defined()) add_cpu<T>(grads.grad_x.data<T>(), grad_sum.data<T>(), grads.grad_x.data<T>(), x.numel());
  });
  return grads;
}

}  // namespace

RmsNormOutput rmsnorm_forward(const Tensor& x, const Tensor& weight, float eps, RmsNormStyle style) {
  ForwardResult out = forward("rmsnorm_forward", x, Tensor(), weight, eps, style);
  return {out.y, out.rstd};
}

RmsNormGrads rmsnorm_backward(const Tensor& grad_y, const Tensor& x, const Tensor& weight, const Tensor& saved_rstd,
                              RmsNormStyle style) {
  return backward("rmsnorm_backward", grad_y, Tensor(), x, weight, saved_rstd, style);
}

RmsNormResidualOutput rmsnorm_residual_forward(const Tensor& x, const Tensor& residual, const Tensor& weight, float eps,
                                               RmsNormStyle style) {
  ZT_REQUIRE(residual.defined(),
             "rmsnorm_residual_forward: residual is undefined; use rmsnorm_forward for no residual");
  ForwardResult out = forward("rmsnorm_residual_forward", x, residual, weight, eps, style);
  return {out.y, out.sum, out.rstd};
}

RmsNormResidualGrads rmsnorm_residual_backward(const Tensor& grad_y, const Tensor& grad_sum, const Tensor& sum,
                                               const Tensor& weight, const Tensor& saved_rstd, RmsNormStyle style) {
  RmsNormGrads grads = backward("rmsnorm_residual_backward", grad_y, grad_sum, sum, weight, saved_rstd, style);
  return {grads.grad_x, grads.grad_weight};
}

}  // namespace zt::ops
