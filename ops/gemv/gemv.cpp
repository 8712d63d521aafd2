#include "ops/gemv/gemv.h"

#include <string>

#include "cuda/gemv/gemv.cuh"
#include "ops/elementwise/elementwise.h"
#include "ops/gemm/linear.h"
#include "ops/op_checks.h"
#include "ops/swiglu/swiglu.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/streams/current_stream.h"

namespace zt::ops {
namespace {

constexpr const char* kOp = "small_m_linear";

std::string prefix() { return std::string(kOp) + ": "; }

bool fused_swiglu(const SmallMLinearOptions& o) { return o.prologue == SmallMPrologue::kSwiglu && !o.up.defined(); }

Shape leading_dims(const Tensor& x) { return Shape(x.shape().begin(), x.shape().end() - 1); }

Shape output_shape(const Tensor& x, const Tensor& weight) {
  Shape shape = x.shape();
  shape.back() = weight.size(0);
  return shape;
}

// An optional tensor beside x: defined, on x's device, of x's dtype.
void check_beside_x(const Tensor& x, const char* name, const Tensor& t) {
  check_same_device(kOp, {{"x", &x}, {name, &t}});
  check_same_dtype(kOp, {{"x", &x}, {name, &t}});
}

void check_prologue_inputs(const Tensor& x, const Tensor& weight, const SmallMLinearOptions& o) {
  const bool rmsnorm = o.prologue == SmallMPrologue::kRmsNorm;
  ZT_REQUIRE(rmsnorm == o.norm_weight.defined(),
             prefix() + (rmsnorm ? "the rmsnorm prologue needs norm_weight"
                                 : "norm_weight is set but the prologue is not rmsnorm"));
  ZT_REQUIRE(o.prologue == SmallMPrologue::kSwiglu || !o.up.defined(),
             prefix() + "up is set but the prologue is not swiglu");
  if (rmsnorm) {
    check_beside_x(x, "norm_weight", o.norm_weight);
    check_dim(kOp, {"norm_weight", &o.norm_weight}, 1);
    check_size(kOp, {"norm_weight", &o.norm_weight}, 0, weight.size(1),
               "in_features of weight " + shape_str(weight.shape()));
  }
  if (o.up.defined()) {
    check_beside_x(x, "up", o.up);
    check_same_shape(kOp, {"up", &o.up}, {"x", &x});
  }
}

void check_epilogue_inputs(const Tensor& x, const Tensor& weight, const SmallMLinearOptions& o) {
  if (o.bias.defined()) {
    check_beside_x(x, "bias", o.bias);
    check_dim(kOp, {"bias", &o.bias}, 1);
    check_size(kOp, {"bias", &o.bias}, 0, weight.size(0), "out_features of weight " + shape_str(weight.shape()));
  }
  if (o.residual.defined()) {
    check_beside_x(x, "residual", o.residual);
    ZT_REQUIRE(o.residual.shape() == output_shape(x, weight),
               prefix() + "residual has shape " + shape_str(o.residual.shape()) + " but the output has shape " +
                   shape_str(output_shape(x, weight)));
  }
}

void check_arguments(const Tensor& x, const Tensor& weight, const SmallMLinearOptions& o) {
  check_same_device(kOp, {{"x", &x}, {"weight", &weight}});
  check_same_dtype(kOp, {{"x", &x}, {"weight", &weight}});
  check_float_on_device(kOp, {"x", &x});
  check_dim(kOp, {"weight", &weight}, 2);
  ZT_REQUIRE(x.dim() >= 1, prefix() + "x must have at least one dimension, got shape " + shape_str(x.shape()));
  const std::int64_t width = fused_swiglu(o) ? 2 * weight.size(1) : weight.size(1);
  ZT_REQUIRE(x.size(-1) == width,
             prefix() + "x has shape " + shape_str(x.shape()) + " but weight has shape " + shape_str(weight.shape()) +
                 "; x's last dimension must be " + std::to_string(width) +
                 (fused_swiglu(o) ? " (2 * in_features: [gate | up])" : " (in_features, weight's dimension 1)"));
  const std::int64_t rows = shape_numel(leading_dims(x));
  ZT_REQUIRE(rows <= kSmallMMaxRows, prefix() + "x of shape " + shape_str(x.shape()) + " has " + std::to_string(rows) +
                                         " rows; the op takes at most " + std::to_string(kSmallMMaxRows) +
                                         " (more rows are a GEMM's work: linear_forward)");
  check_prologue_inputs(x, weight, o);
  check_epilogue_inputs(x, weight, o);
}

// The reference: the existing ops one after another, rounding where each stores.
Tensor composed(const Tensor& x, const Tensor& weight, const SmallMLinearOptions& o) {
  Tensor input = x;
  if (o.prologue == SmallMPrologue::kRmsNorm) input = rmsnorm_forward(x, o.norm_weight, o.eps, o.norm_style).y;
  if (o.prologue == SmallMPrologue::kSwiglu) input = o.up.defined() ? swiglu_forward(x, o.up) : swiglu_fused_forward(x);
  Tensor y = linear_forward(input, weight, o.bias);
  return o.residual.defined() ? residual_add_forward(y, o.residual) : y;
}

// The weight as the kernel reads it: unit stride along a row, rows at least a row apart.
// A weight sliced out of a wider one needs no copy.
Tensor kernel_weight(const Tensor& weight) {
  const bool unit = weight.size(1) <= 1 || weight.stride(1) == 1;
  const bool apart = weight.size(0) <= 1 || weight.stride(0) >= weight.size(1);
  return unit && apart ? weight : weight.contiguous();
}

cuda::GemvPrologue kernel_prologue(SmallMPrologue p) {
  if (p == SmallMPrologue::kRmsNorm) return cuda::GemvPrologue::kRmsNorm;
  return p == SmallMPrologue::kSwiglu ? cuda::GemvPrologue::kSwiglu : cuda::GemvPrologue::kNone;
}

Tensor run_kernel(const Tensor& x_in, const Tensor& weight_in, const SmallMLinearOptions& o) {
  DeviceGuard guard(x_in.device().index);
  const Tensor x = x_in.contiguous(), weight = kernel_weight(weight_in);
  const Tensor up = o.up.defined() ? o.up.contiguous() : Tensor();
  const Tensor norm_weight = o.norm_weight.defined() ? o.norm_weight.contiguous() : Tensor();
  const Tensor bias = o.bias.defined() ? o.bias.contiguous() : Tensor();
  const Tensor residual = o.residual.defined() ? o.residual.contiguous() : Tensor();
  Tensor out = Tensor::empty(output_shape(x, weight), x.dtype(), x.device());
  const std::int64_t in = weight.size(1), out_features = weight.size(0);
  cuda::GemvArgs a;
  a.x = x.data_ptr();
  a.x_row_stride = x.size(-1);
  if (up.defined()) a.up = up.data_ptr();
  if (fused_swiglu(o)) a.up = static_cast<const char*>(x.data_ptr()) + in * dtype_size(x.dtype());
  a.norm_weight = norm_weight.defined() ? norm_weight.data_ptr() : nullptr;
  a.eps = o.eps;
  a.round_normalized = o.norm_style == RmsNormStyle::kQwen;
  a.weight = weight.data_ptr();
  a.weight_row_stride = weight.size(0) <= 1 ? in : weight.stride(0);
  a.bias = bias.defined() ? bias.data_ptr() : nullptr;
  a.residual = residual.defined() ? residual.data_ptr() : nullptr;
  a.residual_row_stride = out_features;
  a.out = out.data_ptr();
  const cuda::GemvShape shape{shape_numel(leading_dims(x)), in, out_features};
  cuda::gemv(a, kernel_prologue(o.prologue), x.dtype(), shape, nullptr, current_stream());
  return out;
}

}  // namespace

Tensor small_m_linear(const Tensor& x, const Tensor& weight, const SmallMLinearOptions& options) {
  check_arguments(x, weight, options);
  const bool nothing_to_stream = x.numel() == 0 || weight.numel() == 0;
  if (x.device().is_cuda() && !nothing_to_stream) return run_kernel(x, weight, options);
  return composed(x, weight, options);
}

}  // namespace zt::ops
