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
  add_lora_up(y, down, b);
  return down;
}

void add_lora_up(const Tensor& y, const Tensor& down, const Tensor& b) {
  detail::gemm_add(as_rows(y), down, false, b, true);
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

LoraStack stack_lora(const std::vector<Tensor>& as, double scale) {
  ZT_REQUIRE(!as.empty(), "lora_linear: no update to stack");
  LoraStack stack{Tensor(), {0}, scale};
  for (const Tensor& a : as) {
    check_same_device("lora_linear", {{"lora_A", &a}, {"the first lora_A", &as.front()}});
    check_dim("lora_linear", {"lora_A", &a}, 2);
    ZT_REQUIRE(a.size(1) == as.front().size(1) && a.dtype() == as.front().dtype(),
               "lora_linear: stacked updates read one input: lora_A " + shape_str(a.shape()) + " beside " +
                   shape_str(as.front().shape()));
    stack.offsets.push_back(stack.offsets.back() + a.size(0));
  }
  stack.a = Tensor::empty({stack.offsets.back(), as.front().size(1)}, as.front().dtype(), as.front().device());
  for (std::size_t i = 0; i < as.size(); ++i) stack.a.narrow(0, stack.offsets[i], as[i].size(0)).copy_from(as[i]);
  return stack;
}

Tensor lora_stacked_down(const Tensor& x, const LoraStack& stack) {
  return scale_forward(detail::gemm(as_rows(x), false, stack.a, true), stack.scale);
}

Tensor stacked_down_of(const Tensor& down, const LoraStack& stack, std::size_t i) {
  return down.narrow(1, stack.offsets[i], stack.offsets[i + 1] - stack.offsets[i]);
}

LoraStackGrads lora_stack_backward(const std::vector<Tensor>& grad_ys, const Tensor& x, const std::vector<Tensor>& bs,
                                   const LoraStack& stack, const Tensor& down, const Tensor& grad_x) {
  ZT_REQUIRE(grad_ys.size() == bs.size() && bs.size() + 1 == stack.offsets.size(),
             "lora_linear: " + std::to_string(grad_ys.size()) + " output gradients and " + std::to_string(bs.size()) +
                 " lora_B for " + std::to_string(stack.offsets.size() - 1) + " stacked updates");
  const Tensor rows_x = as_rows(x);
  // grad_downᵀ stacked [Σ rank, rows]: each update's block is contiguous rows there.
  Tensor grad_down_t = Tensor::empty({stack.offsets.back(), rows_x.size(0)}, x.dtype(), x.device());
  LoraStackGrads grads;
  for (std::size_t i = 0; i < bs.size(); ++i) {
    const Tensor dy = as_rows(grad_ys[i]);
    grads.grad_b.push_back(detail::gemm(dy, true, stacked_down_of(down, stack, i), false));  // [out, rank]
    grad_down_t.narrow(0, stack.offsets[i], bs[i].size(1)).copy_from(detail::gemm(bs[i], true, dy, true));
  }
  grad_down_t = scale_forward(grad_down_t, stack.scale);
  const Tensor grad_a = detail::gemm(grad_down_t, false, rows_x, false);  // [Σ rank, in]
  for (std::size_t i = 0; i < bs.size(); ++i)
    grads.grad_a.push_back(grad_a.narrow(0, stack.offsets[i], stack.offsets[i + 1] - stack.offsets[i]));
  if (grad_x.defined()) detail::gemm_add(as_rows(grad_x), grad_down_t, true, stack.a, false);
  return grads;
}

}  // namespace zt::ops
