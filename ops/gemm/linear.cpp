#include "ops/gemm/linear.h"

#include <optional>
#include <string>

#include "ops/gemm/few_rows_product.h"
#include "ops/gemm/matmul_gemm.h"
#include "ops/op_checks.h"
#include "ops/swiglu/swiglu.h"
#include "runtime/error.h"

namespace zt::ops {
namespace {

void check_arguments(const char* op, const Tensor& x, const Tensor& weight, const Tensor& bias) {
  check_same_device(op, {{"x", &x}, {"weight", &weight}});
  check_same_dtype(op, {{"x", &x}, {"weight", &weight}});
  check_float_on_device(op, {"x", &x});
  check_dim(op, {"weight", &weight}, 2);
  ZT_REQUIRE(x.dim() >= 1, std::string(op) + ": x must have at least one dimension, got shape " + shape_str(x.shape()));
  ZT_REQUIRE(x.size(-1) == weight.size(1), std::string(op) + ": x has shape " + shape_str(x.shape()) +
                                               " but weight has shape " + shape_str(weight.shape()) +
                                               "; x's last dimension must equal weight's in_features (dimension 1)");
  if (!bias.defined()) return;
  check_same_device(op, {{"x", &x}, {"bias", &bias}});
  check_same_dtype(op, {{"x", &x}, {"bias", &bias}});
  check_dim(op, {"bias", &bias}, 1);
  check_size(op, {"bias", &bias}, 0, weight.size(0), "out_features of weight " + shape_str(weight.shape()));
}

// x's leading dims folded into rows: [rows, last].
Tensor as_rows(const Tensor& x) {
  Shape leading(x.shape().begin(), x.shape().end() - 1);
  return x.reshape({shape_numel(leading), x.size(-1)});
}

Shape with_last(const Tensor& x, std::int64_t last) {
  Shape shape = x.shape();
  shape.back() = last;
  return shape;
}

}  // namespace

Tensor linear_forward(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  check_arguments("linear", x, weight, bias);
  const Tensor rows = as_rows(x);
  std::optional<Tensor> y = detail::few_rows_product(rows, weight, bias, cuda::FewRowsOutput::kLinear);
  return (y ? *y : detail::gemm(rows, false, weight, true, bias)).view(with_last(x, weight.size(0)));
}

Tensor linear_swiglu_forward(const Tensor& x, const Tensor& gate_up_weight, const Tensor& bias) {
  check_arguments("linear_swiglu", x, gate_up_weight, bias);
  ZT_REQUIRE(gate_up_weight.size(0) % 2 == 0, "linear_swiglu: the weight has shape " +
                                                  shape_str(gate_up_weight.shape()) +
                                                  "; [gate; up] needs an even number of rows (out_features)");
  const std::optional<Tensor> y =
      detail::few_rows_product(as_rows(x), gate_up_weight, bias, cuda::FewRowsOutput::kSwiglu);
  if (y) return y->view(with_last(x, gate_up_weight.size(0) / 2));
  return swiglu_fused_forward(linear_forward(x, gate_up_weight, bias));
}

LinearGrads linear_backward(const Tensor& grad_y, const Tensor& x, const Tensor& weight,
                            const LinearGradsNeeded& needed, const LinearGradTargets& into) {
  const char* op = "linear_backward";
  ZT_REQUIRE(!needed.x || weight.defined(), std::string(op) + ": grad_x needs the weight");
  ZT_REQUIRE(!needed.weight || x.defined(), std::string(op) + ": grad_weight needs the input x");
  if (x.defined() && weight.defined()) check_arguments(op, x, weight, Tensor());
  for (const Tensor* operand : {&x, &weight}) {
    if (!operand->defined()) continue;
    check_same_device(op, {{"grad_y", &grad_y}, {operand == &x ? "x" : "weight", operand}});
    check_same_dtype(op, {{"grad_y", &grad_y}, {operand == &x ? "x" : "weight", operand}});
  }
  if (x.defined() && weight.defined()) {
    Shape expected = with_last(x, weight.size(0));
    ZT_REQUIRE(grad_y.shape() == expected, std::string(op) + ": grad_y has shape " + shape_str(grad_y.shape()) +
                                               " but x " + shape_str(x.shape()) + " times weight " +
                                               shape_str(weight.shape()) + " gives shape " + shape_str(expected));
  } else if (x.defined()) {
    Shape expected = with_last(x, grad_y.dim() ? grad_y.size(-1) : 0);
    ZT_REQUIRE(grad_y.shape() == expected, std::string(op) + ": grad_y has shape " + shape_str(grad_y.shape()) +
                                               " but x has shape " + shape_str(x.shape()) +
                                               "; they must agree in every dimension but the last");
  } else if (weight.defined()) {
    check_dim(op, {"weight", &weight}, 2);
    ZT_REQUIRE(grad_y.dim() >= 1 && grad_y.size(-1) == weight.size(0),
               std::string(op) + ": grad_y has shape " + shape_str(grad_y.shape()) + " but weight has shape " +
                   shape_str(weight.shape()) + "; grad_y's last dimension must equal out_features (dimension 0)");
  }
  Tensor dy = as_rows(grad_y);
  LinearGrads grads;
  if (needed.x && into.grad_x.defined()) {
    ZT_REQUIRE(into.grad_x.shape() == with_last(grad_y, weight.size(1)),
               std::string(op) + ": the grad_x to add into has shape " + shape_str(into.grad_x.shape()) + ", not x's " +
                   shape_str(with_last(grad_y, weight.size(1))));
    detail::gemm_add(as_rows(into.grad_x), dy, false, weight, false);
    grads.grad_x = into.grad_x;
  } else if (needed.x) {
    grads.grad_x = detail::gemm(dy, false, weight, false).view(with_last(grad_y, weight.size(1)));
  }
  if (needed.weight && into.weight_sink.defined())
    detail::gemm_add(into.weight_sink, dy, true, as_rows(x), false);
  else if (needed.weight)
    grads.grad_weight = detail::gemm(dy, true, as_rows(x), false);
  if (needed.bias) {
    // The column sums of grad_y as a product with a row of ones: one GEMM, fp32 accumulation.
    Tensor ones = Tensor::ones({1, dy.size(0)}, dy.dtype(), dy.device());
    grads.grad_bias = detail::gemm(ones, false, dy, false).view({dy.size(1)});
  }
  return grads;
}

}  // namespace zt::ops
