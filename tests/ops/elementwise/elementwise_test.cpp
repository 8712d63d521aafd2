// SwiGLU, elementwise arithmetic, casts, sums and means, and dropout on the CPU: float64
// finite-difference gradients, hand-computed values, 16-bit rounding, errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "ops/elementwise/dropout.h"
#include "ops/elementwise/elementwise.h"
#include "ops/reduce/reduce.h"
#include "ops/swiglu/swiglu.h"
#include "runtime/error.h"
#include "runtime/philox.h"
#include "tests/common/gradcheck.h"
#include "tests/common/op_test_util.h"

namespace zt {
namespace {

using Values = std::vector<double>;
using namespace testing;  // the helpers of tests/common/

// ---- SwiGLU ----

TEST(Swiglu, HandComputedValues) {
  Tensor gate = Tensor::from_values({1, 0, -2}, {3}, DType::kF64);
  Tensor up = Tensor::from_values({2, 5, 1}, {3}, DType::kF64);
  Values y = ops::swiglu_forward(gate, up).to_vector();
  EXPECT_NEAR(y[0], 2 / (1 + std::exp(-1.0)), 1e-12);
  EXPECT_EQ(y[1], 0.0);
  EXPECT_NEAR(y[2], -2 / (1 + std::exp(2.0)), 1e-12);
}

TEST(Swiglu, GradientsMatchFiniteDifferencesSeparate) {
  for (Shape shape : {Shape{3, 5}, Shape{2, 1, 7}, Shape{1}}) {
    auto forward = [](const std::vector<Tensor>& in) { return ops::swiglu_forward(in[0], in[1]); };
    auto backward = [](const std::vector<Tensor>& in, const Tensor& grad) {
      ops::SwigluGrads g = ops::swiglu_backward(grad, in[0], in[1]);
      return std::vector<Tensor>{g.grad_gate, g.grad_up};
    };
    expect_gradients_match("swiglu " + shape_str(shape), forward, backward,
                           {random_tensor(shape, 1), random_tensor(shape, 2)}, {true, true});
  }
}

TEST(Swiglu, GradientsMatchFiniteDifferencesFused) {
  for (Shape shape : {Shape{3, 10}, Shape{2, 2, 6}, Shape{2}}) {
    auto forward = [](const std::vector<Tensor>& in) { return ops::swiglu_fused_forward(in[0]); };
    auto backward = [](const std::vector<Tensor>& in, const Tensor& grad) {
      return std::vector<Tensor>{ops::swiglu_fused_backward(grad, in[0])};
    };
    expect_gradients_match("swiglu fused " + shape_str(shape), forward, backward, {random_tensor(shape, 3)}, {true});
  }
}

TEST(Swiglu, FusedLayoutIsGateThenUp) {
  Tensor gate_up = random_tensor({4, 14}, 4, DType::kF32);
  Tensor gate = gate_up.narrow(1, 0, 7), up = gate_up.narrow(1, 7, 7);
  EXPECT_EQ(ops::swiglu_fused_forward(gate_up).to_vector(), ops::swiglu_forward(gate, up).to_vector());
  Tensor grad = random_tensor({4, 7}, 5, DType::kF32);
  ops::SwigluGrads separate = ops::swiglu_backward(grad, gate, up);
  Tensor fused = ops::swiglu_fused_backward(grad, gate_up);
  EXPECT_EQ(fused.narrow(1, 0, 7).to_vector(), separate.grad_gate.to_vector());
  EXPECT_EQ(fused.narrow(1, 7, 7).to_vector(), separate.grad_up.to_vector());
}

// The backward that writes the forward's output again: the plain backward's gradient and the
// forward's output, bit for bit, in every dtype (16-bit ones round silu where the forward does).
TEST(Swiglu, RecomputingBackwardGivesTheForwardsOutputExactly) {
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16, DType::kF64}) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor gate_up = random_tensor({5, 2, 18}, 10, dtype), grad = random_tensor({5, 2, 9}, 11, dtype);
    ops::SwigluRecomputed recomputed = ops::swiglu_fused_backward_recomputing(grad, gate_up);
    EXPECT_EQ(recomputed.out.shape(), grad.shape());
    EXPECT_EQ(recomputed.out.to_vector(), ops::swiglu_fused_forward(gate_up).to_vector());
    EXPECT_EQ(recomputed.grad_gate_up.to_vector(), ops::swiglu_fused_backward(grad, gate_up).to_vector());
  }
  expect_mentions(error_of([&] {
                    ops::swiglu_fused_backward_recomputing(random_tensor({2, 4}, 9, DType::kF32),
                                                           random_tensor({2, 5}, 9, DType::kF32));
                  }),
                  {"[2, 5]", "even"});
}

// torch: F.silu(gate) is stored in bf16, then multiplied by up and rounded again.
TEST(Swiglu, Bf16RoundsSiluBeforeTheProduct) {
  Tensor gate = random_tensor({9, 31}, 6, DType::kBF16), up = random_tensor({9, 31}, 7, DType::kBF16);
  Tensor silu = ops::swiglu_forward(gate.to(DType::kF32), Tensor::ones({9, 31}, DType::kF32));
  Tensor expected = ops::mul_forward(silu.to(DType::kBF16), up);
  EXPECT_EQ(ops::swiglu_forward(gate, up).to_vector(), expected.to_vector());
}

TEST(Swiglu, BadArgumentsNameShapes) {
  Tensor a = random_tensor({2, 6}, 8, DType::kF32);
  expect_mentions(error_of([&] {
                    ops::swiglu_forward(a, random_tensor({2, 5}, 9, DType::kF32));
                  }),
                  {"[2, 6]", "[2, 5]"});
  expect_mentions(error_of([&] {
                    ops::swiglu_fused_forward(random_tensor({2, 5}, 9, DType::kF32));
                  }),
                  {"[2, 5]", "even"});
  expect_mentions(error_of([&] {
                    ops::swiglu_fused_backward(random_tensor({2, 6}, 9, DType::kF32), a);
                  }),
                  {"[2, 6]", "halved"});
}

// ---- add, sub, mul, scale, residual add, cast ----

TEST(Elementwise, HandComputedValuesWithBroadcast) {
  Tensor a = Tensor::from_values({1, 2, 3, 4, 5, 6}, {2, 3}, DType::kF32);
  Tensor b = Tensor::from_values({10, 20, 30}, {3}, DType::kF32);
  EXPECT_EQ(ops::add_forward(a, b).to_vector(), (Values{11, 22, 33, 14, 25, 36}));
  EXPECT_EQ(ops::sub_forward(a, b).to_vector(), (Values{-9, -18, -27, -6, -15, -24}));
  EXPECT_EQ(ops::mul_forward(a, b).to_vector(), (Values{10, 40, 90, 40, 100, 180}));
  EXPECT_EQ(ops::mul_forward(a, a).to_vector(), (Values{1, 4, 9, 16, 25, 36}));
  EXPECT_EQ(ops::scale_forward(a, -0.5).to_vector(), (Values{-0.5, -1, -1.5, -2, -2.5, -3}));
  EXPECT_EQ(ops::residual_add_forward(a, a).to_vector(), (Values{2, 4, 6, 8, 10, 12}));
  Tensor s = Tensor::from_values({2}, {}, DType::kF32);
  EXPECT_EQ(ops::mul_forward(a, s).to_vector(), (Values{2, 4, 6, 8, 10, 12}));
}

TEST(Elementwise, BinaryGradientsMatchFiniteDifferences) {
  for (auto [a_shape, b_shape] : {std::pair{Shape{3, 4}, Shape{3, 4}}, std::pair{Shape{2, 3, 5}, Shape{5}},
                                  std::pair{Shape{2, 3, 5}, Shape{3, 5}}, std::pair{Shape{4, 2}, Shape{}}}) {
    std::string sizes = shape_str(a_shape) + " with " + shape_str(b_shape);
    std::vector<Tensor> inputs{random_tensor(a_shape, 10), random_tensor(b_shape, 11)};
    auto add = [](const std::vector<Tensor>& in) { return ops::add_forward(in[0], in[1]); };
    auto add_back = [](const std::vector<Tensor>& in, const Tensor& g) {
      ops::BinaryGrads r = ops::add_backward(g, in[1].shape());
      return std::vector<Tensor>{r.grad_a, r.grad_b};
    };
    expect_gradients_match("add " + sizes, add, add_back, inputs, {true, true});
    auto sub = [](const std::vector<Tensor>& in) { return ops::sub_forward(in[0], in[1]); };
    auto sub_back = [](const std::vector<Tensor>& in, const Tensor& g) {
      ops::BinaryGrads r = ops::sub_backward(g, in[1].shape());
      return std::vector<Tensor>{r.grad_a, r.grad_b};
    };
    expect_gradients_match("sub " + sizes, sub, sub_back, inputs, {true, true});
    auto mul = [](const std::vector<Tensor>& in) { return ops::mul_forward(in[0], in[1]); };
    auto mul_back = [](const std::vector<Tensor>& in, const Tensor& g) {
      ops::BinaryGrads r = ops::mul_backward(g, in[0], in[1]);
      return std::vector<Tensor>{r.grad_a, r.grad_b};
    };
    expect_gradients_match("mul " + sizes, mul, mul_back, inputs, {true, true});
  }
}

TEST(Elementwise, ScaleAndResidualGradientsMatchFiniteDifferences) {
  auto scale = [](const std::vector<Tensor>& in) { return ops::scale_forward(in[0], 1.75); };
  auto scale_back = [](const std::vector<Tensor>&, const Tensor& g) {
    return std::vector<Tensor>{ops::scale_backward(g, 1.75)};
  };
  expect_gradients_match("scale", scale, scale_back, {random_tensor({3, 7}, 12)}, {true});
  auto residual = [](const std::vector<Tensor>& in) { return ops::residual_add_forward(in[0], in[1]); };
  auto residual_back = [](const std::vector<Tensor>&, const Tensor& g) {
    ops::BinaryGrads r = ops::residual_add_backward(g);
    return std::vector<Tensor>{r.grad_a, r.grad_b};
  };
  expect_gradients_match("residual_add", residual, residual_back,
                         {random_tensor({2, 5}, 13), random_tensor({2, 5}, 14)}, {true, true});
}

TEST(Elementwise, CastGradientMatchesFiniteDifferences) {
  // f64 -> f32 -> f64: a step of 1e-3 keeps float32's rounding well below the tolerance.
  auto forward = [](const std::vector<Tensor>& in) {
    return ops::scale_forward(ops::cast_forward(in[0], DType::kF32), 2.0).to(DType::kF64);
  };
  auto backward = [](const std::vector<Tensor>&, const Tensor& g) {
    return std::vector<Tensor>{ops::cast_backward(ops::scale_backward(g.to(DType::kF32), 2.0), DType::kF64)};
  };
  expect_gradients_match("cast", forward, backward, {random_tensor({3, 4}, 15)}, {true}, 1e-3, 1e-4);
  Tensor g = random_tensor({5}, 16, DType::kF32);
  EXPECT_EQ(ops::cast_backward(g, DType::kBF16).dtype(), DType::kBF16);
  EXPECT_EQ(ops::cast_forward(g, DType::kF16).dtype(), DType::kF16);
}

TEST(Elementwise, Bf16ComputesInFloatAndRoundsOnce) {
  Tensor a = random_tensor({257}, 17, DType::kBF16), b = random_tensor({257}, 18, DType::kBF16);
  Tensor expected = ops::add_forward(a.to(DType::kF32), b.to(DType::kF32)).to(DType::kBF16);
  EXPECT_EQ(ops::add_forward(a, b).to_vector(), expected.to_vector());
  expected = ops::mul_forward(a.to(DType::kF32), b.to(DType::kF32)).to(DType::kBF16);
  EXPECT_EQ(ops::mul_forward(a, b).to_vector(), expected.to_vector());
  expected = ops::scale_forward(a.to(DType::kF32), 0.3).to(DType::kBF16);
  EXPECT_EQ(ops::scale_forward(a, 0.3).to_vector(), expected.to_vector());
}

TEST(Elementwise, BadArgumentsNameShapesAndDtypes) {
  Tensor a = random_tensor({2, 3}, 19, DType::kF32);
  expect_mentions(error_of([&] { ops::add_forward(a, random_tensor({2}, 20, DType::kF32)); }), {"[2, 3]", "[2]"});
  expect_mentions(error_of([&] {
                    ops::mul_forward(a, random_tensor({2, 3}, 20, DType::kF16));
                  }),
                  {"float32", "float16"});
  expect_mentions(error_of([&] { ops::residual_add_forward(a, random_tensor({3}, 20, DType::kF32)); }),
                  {"[2, 3]", "[3]"});
  expect_mentions(error_of([&] { ops::scale_forward(Tensor::arange(4), 2.0); }), {"int64"});
  expect_mentions(error_of([&] { ops::add_backward(a, {4}); }), {"[2, 3]", "[4]"});
}

// ---- sum and mean ----

TEST(Reduce, HandComputedValues) {
  Tensor x = Tensor::from_values({1, 2, 3, 4, 5, 6}, {2, 3}, DType::kF32);
  EXPECT_EQ(ops::sum_forward(x).shape(), Shape{});
  EXPECT_EQ(ops::sum_forward(x).item(), 21.0);
  EXPECT_EQ(ops::mean_forward(x).item(), 3.5);
  EXPECT_EQ(ops::sum_dim_forward(x, 0, false).to_vector(), (Values{5, 7, 9}));
  EXPECT_EQ(ops::sum_dim_forward(x, -1, true).shape(), (Shape{2, 1}));
  EXPECT_EQ(ops::sum_dim_forward(x, -1, true).to_vector(), (Values{6, 15}));
  EXPECT_EQ(ops::mean_dim_forward(x, 1, false).to_vector(), (Values{2, 5}));
  EXPECT_EQ(ops::sum_to_trailing(x, {3}).to_vector(), (Values{5, 7, 9}));
}

TEST(Reduce, GradientsMatchFiniteDifferences) {
  Shape shape{3, 4, 5};
  Tensor x = random_tensor(shape, 21);
  auto check = [&](const std::string& what, auto forward, auto backward) {
    expect_gradients_match(what, forward, backward, {x}, {true});
  };
  check(
      "sum", [](const std::vector<Tensor>& in) { return ops::sum_forward(in[0]); },
      [&](const std::vector<Tensor>&, const Tensor& g) { return std::vector<Tensor>{ops::sum_backward(g, shape)}; });
  check(
      "mean", [](const std::vector<Tensor>& in) { return ops::mean_forward(in[0]); },
      [&](const std::vector<Tensor>&, const Tensor& g) { return std::vector<Tensor>{ops::mean_backward(g, shape)}; });
  for (std::int64_t dim : {0, 1, 2, -1})
    for (bool keepdim : {false, true}) {
      std::string suffix = " dim " + std::to_string(dim) + (keepdim ? " keepdim" : "");
      check(
          "sum" + suffix, [&](const std::vector<Tensor>& in) { return ops::sum_dim_forward(in[0], dim, keepdim); },
          [&](const std::vector<Tensor>&, const Tensor& g) {
            return std::vector<Tensor>{ops::sum_dim_backward(g, shape, dim, keepdim)};
          });
      check(
          "mean" + suffix, [&](const std::vector<Tensor>& in) { return ops::mean_dim_forward(in[0], dim, keepdim); },
          [&](const std::vector<Tensor>&, const Tensor& g) {
            return std::vector<Tensor>{ops::mean_dim_backward(g, shape, dim, keepdim)};
          });
    }
}

TEST(Reduce, Bf16SumsInFloatAndRoundsOnce) {
  // 4096 ones: a bf16 running sum would stall at 256; float accumulation gets 4096 exactly.
  Tensor ones = Tensor::ones({4096}, DType::kBF16);
  EXPECT_EQ(ops::sum_forward(ones).dtype(), DType::kBF16);
  EXPECT_EQ(ops::sum_forward(ones).item(), 4096.0);
  EXPECT_EQ(ops::sum_dim_forward(ones.reshape({64, 64}), 0, false).to_vector(), Values(64, 64.0));
}

TEST(Reduce, BadArgumentsNameShapes) {
  Tensor x = random_tensor({2, 3}, 22, DType::kF32);
  expect_mentions(error_of([&] { ops::sum_dim_forward(x, 2, false); }), {"2", "[2, 3]"});
  expect_mentions(error_of([&] {
                    ops::sum_dim_backward(random_tensor({3}, 23, DType::kF32), {2, 3}, 1, false);
                  }),
                  {"[3]", "[2, 3]", "[2]"});
  expect_mentions(error_of([&] { ops::sum_to_trailing(x, {2}); }), {"[2]", "[2, 3]"});
  expect_mentions(error_of([&] { ops::sum_backward(x, {2, 3}); }), {"[2, 3]"});
}

// ---- dropout ----

TEST(Dropout, KeepsExactlyTheElementsWhosePhiloxUniformIsAtLeastP) {
  ops::DropoutConfig config{0.3, 1234, 8};
  Tensor x = random_tensor({7, 11}, 24, DType::kF32);
  Values y = ops::dropout_forward(x, config).to_vector(), xv = x.to_vector();
  float scale = static_cast<float>(1.0 / 0.7);
  for (std::size_t i = 0; i < y.size(); ++i) {
    bool keep = philox::uniform(config.seed, config.offset, i) >= 0.3f;
    EXPECT_EQ(y[i], keep ? static_cast<double>(static_cast<float>(xv[i]) * scale) : 0.0) << i;
  }
}

TEST(Dropout, MaskDependsOnlyOnSeedAndOffset) {
  Tensor x = Tensor::ones({10000}, DType::kF32);
  ops::DropoutConfig config{0.25, 77, 0};
  Values first = ops::dropout_forward(x, config).to_vector();
  EXPECT_EQ(ops::dropout_forward(x, config).to_vector(), first);
  EXPECT_EQ(ops::dropout_backward(x, config).to_vector(), first) << "backward regenerates the forward's mask";
  EXPECT_NE(ops::dropout_forward(x, {0.25, 78, 0}).to_vector(), first);
  EXPECT_NE(ops::dropout_forward(x, {0.25, 77, philox::blocks_for(10000)}).to_vector(), first);
  double kept = 0;
  for (double v : first) kept += v != 0.0;
  EXPECT_NEAR(kept / 10000, 0.75, 0.02);
}

TEST(Dropout, ZeroIsIdentityAndOneGivesZeros) {
  for (DType dtype : {DType::kF64, DType::kF32, DType::kBF16, DType::kF16}) {
    Tensor x = random_tensor({3, 33}, 25, dtype);
    EXPECT_EQ(ops::dropout_forward(x, {0.0, 5, 0}).to_vector(), x.to_vector()) << dtype_name(dtype);
    EXPECT_EQ(ops::dropout_forward(x, {1.0, 5, 0}).to_vector(), Values(99, 0.0)) << dtype_name(dtype);
  }
}

TEST(Dropout, GradientMatchesFiniteDifferencesWithFixedSeed) {
  ops::DropoutConfig config{0.4, 99, 3};
  auto forward = [&](const std::vector<Tensor>& in) { return ops::dropout_forward(in[0], config); };
  auto backward = [&](const std::vector<Tensor>&, const Tensor& g) {
    return std::vector<Tensor>{ops::dropout_backward(g, config)};
  };
  expect_gradients_match("dropout", forward, backward, {random_tensor({4, 9}, 26)}, {true});
}

TEST(Dropout, BadArguments) {
  Tensor x = random_tensor({4}, 27, DType::kF32);
  expect_mentions(error_of([&] { ops::dropout_forward(x, {1.5, 0, 0}); }), {"p", "1.5"});
  expect_mentions(error_of([&] { ops::dropout_forward(Tensor::arange(3), {0.5, 0, 0}); }), {"int64"});
}

}  // namespace
}  // namespace zt
