// The fused LoRA linear (ops/gemm/lora_linear.h) against the same sum taken apart, in float64
// on the CPU: y = x Wᵀ + b + scale (x Aᵀ) Bᵀ forward, and every gradient of its backward,
// with and without the bias and the input gradient; gemm_add on its own; shapes refused.
#include <gtest/gtest.h>

#include <vector>

#include "ops/elementwise/elementwise.h"
#include "ops/gemm/linear.h"
#include "ops/gemm/lora_linear.h"
#include "ops/gemm/matmul_gemm.h"
#include "runtime/error.h"
#include "tests/common/op_test_util.h"

namespace zt {
namespace {

using testing::random_tensor;

struct Composed {
  Tensor y, grad_x, grad_a, grad_b, grad_bias;
};

// The update as separate linear layers, scale and add.
Composed composed(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& a, const Tensor& b, double scale,
                  const Tensor& gy) {
  Tensor down = ops::linear_forward(x, a);
  Tensor y = ops::add_forward(ops::linear_forward(x, w, bias), ops::scale_forward(ops::linear_forward(down, b), scale));
  Tensor g_up = ops::scale_forward(gy, scale);
  ops::LinearGrads through_b = ops::linear_backward(g_up, down, b, {});
  ops::LinearGrads through_a = ops::linear_backward(through_b.grad_x, x, a, {});
  ops::LinearGrads base = ops::linear_backward(gy, x, w, {.x = true, .weight = false, .bias = bias.defined()});
  return {y, ops::add_forward(base.grad_x, through_a.grad_x), through_a.grad_weight, through_b.grad_weight,
          base.grad_bias};
}

void check(const Shape& x_shape, std::int64_t out, std::int64_t rank, bool with_bias, std::uint64_t seed) {
  const std::int64_t in = x_shape.back();
  Tensor x = random_tensor(x_shape, seed), w = random_tensor({out, in}, seed + 1);
  Tensor a = random_tensor({rank, in}, seed + 2), b = random_tensor({out, rank}, seed + 3);
  Tensor bias = with_bias ? random_tensor({out}, seed + 4) : Tensor();
  Shape y_shape = x_shape;
  y_shape.back() = out;
  Tensor gy = random_tensor(y_shape, seed + 5);
  const double scale = 1.75;
  const Composed want = composed(x, w, bias, a, b, scale, gy);
  ops::LoraLinearOutput fused = ops::lora_linear_forward(x, w, bias, a, b, scale);
  EXPECT_EQ(fused.y.shape(), y_shape);
  EXPECT_LE(max_abs_diff(fused.y, want.y), 1e-10);
  ops::LoraLinearGrads grads =
      ops::lora_linear_backward(gy, x, w, a, b, fused.down, scale, {.x = true, .weight = false, .bias = with_bias});
  EXPECT_LE(max_abs_diff(grads.base.grad_x, want.grad_x), 1e-10);
  EXPECT_LE(max_abs_diff(grads.grad_a, want.grad_a), 1e-10);
  EXPECT_LE(max_abs_diff(grads.grad_b, want.grad_b), 1e-10);
  EXPECT_FALSE(grads.base.grad_weight.defined());
  if (with_bias) {
    EXPECT_LE(max_abs_diff(grads.base.grad_bias, want.grad_bias), 1e-10);
  }
  // An input that needs no gradient: no grad_x, and the frozen weight is not read.
  ops::LoraLinearGrads without_x =
      ops::lora_linear_backward(gy, x, Tensor(), a, b, fused.down, scale, {.x = false, .weight = false});
  EXPECT_FALSE(without_x.base.grad_x.defined());
  EXPECT_LE(max_abs_diff(without_x.grad_a, want.grad_a), 1e-10);
}

TEST(LoraLinear, EqualsTheUpdateTakenApart) {
  check({7, 5}, 9, 2, true, 10);
  check({3, 4, 6}, 5, 1, false, 20);
  check({1, 8}, 3, 4, true, 30);
}

TEST(LoraLinear, RefusesUpdatesThatDoNotFitTheWeight) {
  Tensor x = random_tensor({4, 6}, 1), w = random_tensor({5, 6}, 2);
  EXPECT_THROW(ops::lora_linear_forward(x, w, Tensor(), random_tensor({2, 7}, 3), random_tensor({5, 2}, 4), 1.0),
               Error);
  EXPECT_THROW(ops::lora_linear_forward(x, w, Tensor(), random_tensor({2, 6}, 3), random_tensor({5, 3}, 4), 1.0),
               Error);
}

// Updates of one input stacked (q, k, v with ranks 2, 1 and 3): each output and gradient equals
// its update alone, the input gradient the sum of theirs, added to what grad_x held.
TEST(LoraStack, EqualsEachUpdateAlone) {
  const std::int64_t rows = 7, in = 6;
  const std::vector<std::int64_t> outs{5, 2, 4}, ranks{2, 1, 3};
  const double scale = 0.75;
  Tensor x = random_tensor({rows, in}, 40);
  std::vector<Tensor> as, bs, gys;
  for (std::size_t i = 0; i < outs.size(); ++i) {
    as.push_back(random_tensor({ranks[i], in}, 41 + i));
    bs.push_back(random_tensor({outs[i], ranks[i]}, 51 + i));
    gys.push_back(random_tensor({rows, outs[i]}, 61 + i));
  }
  const ops::LoraStack stack = ops::stack_lora(as, scale);
  EXPECT_EQ(stack.offsets, (std::vector<std::int64_t>{0, 2, 3, 6}));
  const Tensor down = ops::lora_stacked_down(x, stack);
  Tensor held = random_tensor({rows, in}, 70), grad_x = held.contiguous().clone();
  const ops::LoraStackGrads grads = ops::lora_stack_backward(gys, x, bs, stack, down, grad_x);
  Tensor want_grad_x = held;
  for (std::size_t i = 0; i < outs.size(); ++i) {
    const Tensor zero_w = Tensor::zeros({outs[i], in}, x.dtype());
    const ops::LoraLinearOutput alone = ops::lora_linear_forward(x, zero_w, Tensor(), as[i], bs[i], scale);
    Tensor y = Tensor::zeros({rows, outs[i]}, x.dtype());
    ops::add_lora_up(y, ops::stacked_down_of(down, stack, i), bs[i]);
    EXPECT_LE(max_abs_diff(y, alone.y), 1e-12) << "update " << i;
    const ops::LoraLinearGrads want =
        ops::lora_linear_backward(gys[i], x, zero_w, as[i], bs[i], alone.down, scale, {.x = true, .weight = false});
    EXPECT_LE(max_abs_diff(grads.grad_a[i], want.grad_a), 1e-12) << "update " << i;
    EXPECT_LE(max_abs_diff(grads.grad_b[i], want.grad_b), 1e-12) << "update " << i;
    want_grad_x = ops::add_forward(want_grad_x, want.base.grad_x);
  }
  EXPECT_LE(max_abs_diff(grad_x, want_grad_x), 1e-12);
  EXPECT_THROW(ops::stack_lora({as[0], random_tensor({2, in + 1}, 80)}, scale), Error);
}

TEST(GemmAdd, AddsTheProductInPlaceAndRefusesAnotherShape) {
  Tensor a = random_tensor({4, 3}, 1), b = random_tensor({5, 3}, 2), out = random_tensor({4, 5}, 3);
  Tensor want = ops::add_forward(out, ops::detail::gemm(a, false, b, true));
  ops::detail::gemm_add(out, a, false, b, true);
  EXPECT_LE(max_abs_diff(out, want), 1e-12);
  Tensor wrong = random_tensor({5, 4}, 4);
  EXPECT_THROW(ops::detail::gemm_add(wrong, a, false, b, true), Error);
}

}  // namespace
}  // namespace zt
