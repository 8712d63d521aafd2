// dst += src * factor into float32 buffers: every source dtype, and its errors.
#include <gtest/gtest.h>

#include "ops/elementwise/accumulate.h"
#include "tests/common/op_test_util.h"

namespace zt {
namespace {

TEST(Accumulate, AddsScaledSourceOfEveryFloatDtype) {
  for (DType dtype : {DType::kF64, DType::kF32, DType::kBF16, DType::kF16}) {
    Tensor dst = Tensor::from_values({1.0, 2.0, -3.0}, {3}, DType::kF32);
    Tensor src = Tensor::from_values({0.5, -1.0, 4.0}, {3}, dtype);
    ops::accumulate_(dst, src, 2.0);
    EXPECT_EQ(dst.to_vector(), (std::vector<double>{2.0, 0.0, 5.0})) << dtype_name(dtype);
  }
}

TEST(Accumulate, TakesAStridedSource) {
  Tensor dst = Tensor::zeros({2, 3}, DType::kF32, Device::cpu());
  Tensor src = testing::random_tensor({3, 2}, 1, DType::kF32);
  ops::accumulate_(dst, src.transpose(0, 1));
  EXPECT_EQ(dst.to_vector(), src.transpose(0, 1).contiguous().to_vector());
}

TEST(Accumulate, ErrorsNameTheProblem) {
  Tensor f32 = Tensor::zeros({3}, DType::kF32, Device::cpu());
  testing::expect_mentions(
      testing::error_of([&] { ops::accumulate_(Tensor::zeros({3}, DType::kBF16, Device::cpu()), f32); }),
      {"dst must be a contiguous float32"});
  testing::expect_mentions(
      testing::error_of([&] { ops::accumulate_(f32, Tensor::zeros({4}, DType::kF32, Device::cpu())); }),
      {"[3]", "[4]"});
}

}  // namespace
}  // namespace zt
