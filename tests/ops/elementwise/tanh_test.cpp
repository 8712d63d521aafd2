// tanh against std::tanh, its gradient against finite differences (op and autograd), and
// 16-bit dtypes computing in float and rounding once.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/functions.h"
#include "ops/elementwise/tanh.h"
#include "tests/common/gradcheck.h"
#include "tests/common/op_test_util.h"

namespace zt {
namespace {

using testing::error_of;
using testing::expect_gradients_match;
using testing::expect_mentions;
using testing::random_tensor;

TEST(Tanh, MatchesStdTanhIncludingSaturation) {
  const std::vector<double> x{-30.0, -2.5, -0.1, 0.0, 0.3, 1.0, 4.0, 30.0};
  Tensor in = Tensor::from_values(x, {2, 4}, DType::kF64);
  std::vector<double> out = ops::tanh_forward(in).to_vector();
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_DOUBLE_EQ(out[i], std::tanh(x[i])) << "x = " << x[i];
}

TEST(Tanh, GradientMatchesFiniteDifferences) {
  auto forward = [](const std::vector<Tensor>& in) { return ops::tanh_forward(in[0]); };
  auto backward = [](const std::vector<Tensor>& in, const Tensor& g) {
    return std::vector<Tensor>{ops::tanh_backward(g, ops::tanh_forward(in[0]))};
  };
  expect_gradients_match("tanh", forward, backward, {random_tensor({3, 7}, 1)}, {true});
}

TEST(Tanh, AutogradGradientMatchesFiniteDifferences) {
  auto forward = [](const std::vector<Tensor>& in) { return autograd::tanh(autograd::Variable(in[0])).data(); };
  auto backward = [](const std::vector<Tensor>& in, const Tensor& g) {
    autograd::Variable x(in[0].clone(), true);
    autograd::sum(autograd::mul(autograd::tanh(x), autograd::Variable(g))).backward();
    return std::vector<Tensor>{x.grad()};
  };
  expect_gradients_match("autograd tanh", forward, backward, {random_tensor({5, 3}, 2)}, {true});
}

TEST(Tanh, SixteenBitComputesInFloatAndRoundsOnce) {
  for (DType dtype : {DType::kBF16, DType::kF16}) {
    Tensor x = random_tensor({301}, 3, dtype), g = random_tensor({301}, 4, dtype);
    Tensor out = ops::tanh_forward(x);
    EXPECT_EQ(out.to_vector(), ops::tanh_forward(x.to(DType::kF32)).to(dtype).to_vector()) << dtype_name(dtype);
    Tensor expected = ops::tanh_backward(g.to(DType::kF32), out.to(DType::kF32)).to(dtype);
    EXPECT_EQ(ops::tanh_backward(g, out).to_vector(), expected.to_vector()) << dtype_name(dtype);
  }
}

TEST(Tanh, BadArgumentsNameShapesAndDtypes) {
  Tensor a = random_tensor({2, 3}, 5, DType::kF32);
  expect_mentions(error_of([&] { ops::tanh_forward(Tensor::arange(4)); }), {"tanh_forward", "int64"});
  expect_mentions(error_of([&] {
                    ops::tanh_backward(a, random_tensor({3, 2}, 6, DType::kF32));
                  }),
                  {"tanh_backward", "[2, 3]", "[3, 2]"});
  expect_mentions(error_of([&] {
                    ops::tanh_backward(a, random_tensor({2, 3}, 6, DType::kBF16));
                  }),
                  {"float32", "bfloat16"});
}

}  // namespace
}  // namespace zt
