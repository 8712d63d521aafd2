#include "ops/gemm/lora_linear.h"

#include <string>

#include "ops/elementwise/elementwise.h"
#include "ops/gemm/matmul_gemm.h"
#include "ops/op_checks.h"
#include "runtime/error.h"

namespace zt::ops {
namespace {

void check_update(const Tensor& x, const Tensor& weight, const Tensor& a, const Tensor& b) {
  const char* op = "lora_linear";
  check_same_device(op, {{"x", &x}, {"lora_A", &a}, {"lora_B", &b}});
  check_same_dtype(op, {{"x", &x}, {"lora_A", &a}, {"lora_B", &b}});
  check_dim(op, {"lora_A", &a}, 2);
  check_dim(op, {"lora_B", &b}, 2);
  // Backward may go without the weight (a frozen one when x needs no gradient): then x says `in`.
  const std::int64_t in = weight.defined() ? weight.size(1) : x.size(-1);
  const bool fits = a.size(1) == in && b.size(1) == a.size(0) && (!weight.defined() || b.size(0) == weight.size(0));
  ZT_REQUIRE(fits, std::string(op) + ": lora_A " + shape_str(a.shape()) + " and lora_B " + shape_str(b.shape()) +
                       " do not fit weight " + (weight.defined() ? shape_str(weight.shape()) : "[?, in]") +
                       " with in = " + std::to_string(in) + "; A is [rank, in] and B [out, rank]");
}

Tensor as_rows(const Tensor& x) { return x.reshape({x.numel() / x.size(-1), x.size(-1)}); }

}  // namespace

LoraLinearOutput lora_linear_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& a,
                                     const Tensor& b, double scale) {
  check_update(x, weight, a, b);
  Tensor y = linear_forward(x, weight, bias);
  Tensor down = add_lora_update(y, x, a, b, scale);
  return {y, down};
}

Tensor add_lora_update(const Tensor& y, const Tensor& x, const Tensor& a, const Tensor& b, double scale) {
  check_update(x, Tensor(), a, b);
  ZT_REQUIRE(y.is_contiguous() && y.dtype() == x.dtype() && y.numel() == x.numel() / x.size(-1) * b.size(0),
             "lora_linear: the output " + shape_str(y.shape()) + " does not take lora_B " + shape_str(b.shape()) +
                 "'s rows for x " + shape_str(x.shape()));
  Tensor down = scale_forward(detail::gemm(as_rows(x), false, a, true), scale);
  detail::gemm_add(as_rows(y), down, false, b, true);
  return down;
}

LoraLinearGrads lora_linear_backward(const Tensor& grad_y, const Tensor& x, const Tensor& weight, const Tensor& a,
                                     const Tensor& b, const Tensor& down, double scale, const LinearGradsNeeded& needed,
                                     const LinearGradTargets& into) {
  check_update(x, weight, a, b);
  LoraLinearGrads grads;
  grads.base = linear_backward(grad_y, x, weight, needed, into);
  const Tensor dy = as_rows(grad_y);
  grads.grad_b = detail::gemm(dy, true, down, false);                                // [out, rank]
  const Tensor grad_down = scale_forward(detail::gemm(dy, false, b, false), scale);  // [rows, rank]
  grads.grad_a = detail::gemm(grad_down, true, as_rows(x), false);                   // [rank, in]
  if (needed.x) detail::gemm_add(as_rows(grads.base.grad_x), grad_down, false, a, false);
  return grads;
}

}  // namespace zt::ops
