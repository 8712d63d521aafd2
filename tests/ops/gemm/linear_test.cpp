// matmul and linear on the CPU: hand-computed values, finite-difference gradients in float64
// for every transpose combination and batch layout, views against contiguous copies, errors.
#include <gtest/gtest.h>

#include <string>

#include "ops/gemm/linear.h"
#include "ops/gemm/matmul.h"
#include "runtime/error.h"
#include "tests/common/gradcheck.h"
#include "tests/common/op_test_util.h"

namespace zt {
namespace {

using Values = std::vector<double>;
using testing::error_of;
using testing::expect_gradients_match;
using testing::random_tensor;
using testing::stored_operand_shape;

TEST(Linear, HandComputedValuesWithAndWithoutBias) {
  Tensor x = Tensor::from_values({1, 2, 3, 4}, {2, 2}, DType::kF32);
  Tensor w = Tensor::from_values({1, 0, 0, 1, 1, 1}, {3, 2}, DType::kF32);
  Tensor b = Tensor::from_values({0.5, -1, 2}, {3}, DType::kF32);
  EXPECT_EQ(ops::linear_forward(x, w, b).to_vector(), (Values{1.5, 1, 5, 3.5, 3, 9}));
  EXPECT_EQ(ops::linear_forward(x, w).to_vector(), (Values{1, 2, 3, 3, 4, 7}));
  Tensor y1 = ops::linear_forward(Tensor::from_values({1, 2}, {2}, DType::kF32), w, b);
  EXPECT_EQ(y1.shape(), (Shape{3}));
  EXPECT_EQ(y1.to_vector(), (Values{1.5, 1, 5}));
}

TEST(Matmul, HandComputedValues) {
  Tensor a = Tensor::from_values({1, 2, 3, 4, 5, 6}, {2, 3}, DType::kF32);
  Tensor b = Tensor::from_values({1, 0, 2, 1, 0, 3}, {3, 2}, DType::kF32);
  EXPECT_EQ(ops::matmul_forward(a, b).to_vector(), (Values{5, 11, 14, 23}));
  // aᵀ = [[1, 4], [2, 5], [3, 6]] times bᵀ = [[1, 2, 0], [0, 1, 3]].
  EXPECT_EQ(ops::matmul_forward(a, b, true, true).shape(), (Shape{3, 3}));
  EXPECT_EQ(ops::matmul_forward(a, b, true, true).to_vector(), (Values{1, 2 + 4, 12, 2, 4 + 5, 15, 3, 6 + 6, 18}));
}

TEST(Linear, Bf16RoundsOnceFromFloat32Accumulation) {
  Tensor x = random_tensor({5, 9}, 1, DType::kBF16), w = random_tensor({4, 9}, 2, DType::kBF16);
  Tensor b = random_tensor({4}, 3, DType::kBF16);
  Tensor y = ops::linear_forward(x, w, b);
  ASSERT_EQ(y.dtype(), DType::kBF16);
  Values xs = x.to_vector(), ws = w.to_vector(), bs = b.to_vector(), ys = y.to_vector();
  for (int i = 0; i < 5; ++i)
    for (int o = 0; o < 4; ++o) {
      float acc = 0.0f;
      for (int k = 0; k < 9; ++k) acc += static_cast<float>(xs[i * 9 + k]) * static_cast<float>(ws[o * 9 + k]);
      acc += static_cast<float>(bs[o]);
      EXPECT_EQ(ys[i * 4 + o], bf16_bits_to_float(float_to_bf16_bits(acc))) << i << "," << o;
    }
}

TEST(Linear, GradientsWithBiasOn3dInput) {
  auto forward = [](const std::vector<Tensor>& in) { return ops::linear_forward(in[0], in[1], in[2]); };
  auto backward = [](const std::vector<Tensor>& in, const Tensor& g) {
    ops::LinearGrads grads = ops::linear_backward(g, in[0], in[1], {.bias = true});
    return std::vector<Tensor>{grads.grad_x, grads.grad_weight, grads.grad_bias};
  };
  expect_gradients_match("linear 3-D with bias", forward, backward,
                         {random_tensor({2, 3, 5}, 1), random_tensor({4, 5}, 2), random_tensor({4}, 3)},
                         {true, true, true});
}

TEST(Linear, GradientsWithoutBias) {
  auto forward = [](const std::vector<Tensor>& in) { return ops::linear_forward(in[0], in[1]); };
  auto backward = [](const std::vector<Tensor>& in, const Tensor& g) {
    ops::LinearGrads grads = ops::linear_backward(g, in[0], in[1], {});
    EXPECT_FALSE(grads.grad_bias.defined());
    return std::vector<Tensor>{grads.grad_x, grads.grad_weight};
  };
  expect_gradients_match("linear 2-D", forward, backward, {random_tensor({3, 7}, 4), random_tensor({5, 7}, 5)},
                         {true, true});
  expect_gradients_match("linear 1-D", forward, backward, {random_tensor({7}, 6), random_tensor({1, 7}, 7)},
                         {true, true});
}

struct Layout {
  std::int64_t batch_a, batch_b;  // 0: a 2-D operand
};

TEST(Matmul, GradientsForEveryTransposeAndBatchLayout) {
  const std::int64_t m = 3, k = 4, n = 5, batch = 2;
  for (Layout layout : {Layout{batch, batch}, Layout{batch, 0}, Layout{0, batch}, Layout{0, 0}})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        auto forward = [=](const std::vector<Tensor>& in) { return ops::matmul_forward(in[0], in[1], ta, tb); };
        auto backward = [=](const std::vector<Tensor>& in, const Tensor& g) {
          ops::MatmulGrads grads = ops::matmul_backward(g, in[0], in[1], ta, tb);
          return std::vector<Tensor>{grads.grad_a, grads.grad_b};
        };
        std::string what = "matmul batch " + std::to_string(layout.batch_a) + "/" + std::to_string(layout.batch_b) +
                           " ta " + std::to_string(ta) + " tb " + std::to_string(tb);
        expect_gradients_match(what, forward, backward,
                               {random_tensor(stored_operand_shape(layout.batch_a, m, k, ta), 10),
                                random_tensor(stored_operand_shape(layout.batch_b, k, n, tb), 11)},
                               {true, true});
      }
}

TEST(Matmul, TransposedAndStridedViewsMatchContiguousCopies) {
  Tensor a_storage = random_tensor({2, 6, 9}, 20, DType::kF32), b_storage = random_tensor({2, 8, 11}, 21, DType::kF32);
  Tensor a = a_storage.narrow(1, 1, 4).narrow(2, 2, 5).transpose(1, 2);  // [2, 5, 4], neither dim unit-stride-free
  Tensor b = b_storage.narrow(1, 0, 4).narrow(2, 3, 7);                  // [2, 4, 7], row stride 11
  EXPECT_EQ(ops::matmul_forward(a, b).to_vector(), ops::matmul_forward(a.contiguous(), b.contiguous()).to_vector());
  Tensor a2 = a.select(0, 1), b2 = b.select(0, 0);
  EXPECT_EQ(ops::matmul_forward(a2.transpose(0, 1), b2, true, false).to_vector(),
            ops::matmul_forward(a2.contiguous(), b2.contiguous()).to_vector());
  Tensor w = random_tensor({7, 5}, 22, DType::kF32).transpose(0, 1);  // weight [5, 7] as a transposed view
  Tensor x = random_tensor({3, 7}, 23, DType::kF32);
  EXPECT_EQ(ops::linear_forward(x, w).to_vector(), ops::linear_forward(x, w.contiguous()).to_vector());
}

TEST(Linear, EmptyInputsAndEmptyInnerDimension) {
  Tensor w = random_tensor({4, 3}, 30), b = random_tensor({4}, 31);
  EXPECT_EQ(ops::linear_forward(Tensor::zeros({0, 3}, DType::kF64), w, b).shape(), (Shape{0, 4}));
  Tensor y = ops::linear_forward(Tensor::zeros({2, 0}, DType::kF64), Tensor::zeros({4, 0}, DType::kF64), b);
  Values expected = b.to_vector();
  expected.insert(expected.end(), expected.begin(), expected.end());
  EXPECT_EQ(y.to_vector(), expected);
  ops::LinearGrads grads =
      ops::linear_backward(Tensor::zeros({0, 4}, DType::kF64), Tensor::zeros({0, 3}, DType::kF64), w, {.bias = true});
  EXPECT_EQ(grads.grad_weight.to_vector(), Values(12, 0.0));
  EXPECT_EQ(grads.grad_bias.to_vector(), Values(4, 0.0));
}

TEST(Linear, ErrorsNameBothShapesOrDtypes) {
  std::string msg = error_of([] { ops::linear_forward(random_tensor({2, 5}, 1), random_tensor({3, 4}, 2)); });
  EXPECT_NE(msg.find("[2, 5]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[3, 4]"), std::string::npos) << msg;
  msg = error_of([] {
    ops::linear_forward(random_tensor({2, 4}, 1, DType::kF32), random_tensor({3, 4}, 2, DType::kBF16));
  });
  EXPECT_NE(msg.find("float32"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bfloat16"), std::string::npos) << msg;
  msg = error_of([] {
    ops::linear_forward(random_tensor({2, 4}, 1), random_tensor({3, 4}, 2), random_tensor({4}, 3));
  });
  EXPECT_NE(msg.find("bias"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[4]"), std::string::npos) << msg;
  msg = error_of([] {
    ops::linear_backward(random_tensor({2, 2}, 1), random_tensor({2, 4}, 1), random_tensor({3, 4}, 2), {});
  });
  EXPECT_NE(msg.find("[2, 2]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2, 3]"), std::string::npos) << msg;
}

TEST(Matmul, ErrorsNameBothShapes) {
  std::string msg = error_of([] { ops::matmul_forward(random_tensor({2, 3, 5}, 1), random_tensor({4, 6}, 2)); });
  EXPECT_NE(msg.find("[2, 3, 5]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[4, 6]"), std::string::npos) << msg;
  msg = error_of([] { ops::matmul_forward(random_tensor({3, 5}, 1), random_tensor({4, 5}, 2), false, false); });
  EXPECT_NE(msg.find("inner"), std::string::npos) << msg;
  msg = error_of([] { ops::matmul_forward(random_tensor({2, 3, 4}, 1), random_tensor({3, 4, 2}, 2)); });
  EXPECT_NE(msg.find("batch"), std::string::npos) << msg;
  msg = error_of([] { ops::matmul_forward(random_tensor({3, 4}, 1), random_tensor({4, 2}, 2, DType::kF32)); });
  EXPECT_NE(msg.find("float64"), std::string::npos) << msg;
  EXPECT_NE(msg.find("float32"), std::string::npos) << msg;
  msg = error_of([] { ops::matmul_forward(random_tensor({2, 2, 3, 4}, 1), random_tensor({4, 2}, 2)); });
  EXPECT_NE(msg.find("2-D or 3-D"), std::string::npos) << msg;
}

}  // namespace
}  // namespace zt
