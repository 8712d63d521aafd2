// dst += src * factor: every source dtype into float32, 16-bit destinations rounding the fp32 sum
// once, and its errors.
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

// bfloat16 keeps 8 significant bits, so between 256 and 512 its values are 2 apart: the float32
// sums 257 and 259 are ties, rounded to even (256 and 260); 1.75 is exact.
TEST(Accumulate, SixteenBitDestinationRoundsTheFloat32SumOnce) {
  for (DType src_dtype : {DType::kF32, DType::kBF16}) {
    Tensor dst = Tensor::from_values({256.0, 256.0, 1.5}, {3}, DType::kBF16);
    ops::accumulate_(dst, Tensor::from_values({1.0, 3.0, 0.25}, {3}, src_dtype));
    EXPECT_EQ(dst.to_vector(), (std::vector<double>{256.0, 260.0, 1.75})) << dtype_name(src_dtype);
    EXPECT_EQ(dst.dtype(), DType::kBF16);
  }
  Tensor half = Tensor::from_values({2048.0}, {1}, DType::kF16);
  ops::accumulate_(half, Tensor::from_values({0.75}, {1}, DType::kF32), 4.0);
  EXPECT_EQ(half.to_vector(), (std::vector<double>{2052.0}));  // float16 spacing at 2048 is 2
}

TEST(Accumulate, TakesAStridedSource) {
  Tensor dst = Tensor::zeros({2, 3}, DType::kF32, Device::cpu());
  Tensor src = testing::random_tensor({3, 2}, 1, DType::kF32);
  ops::accumulate_(dst, src.transpose(0, 1));
  EXPECT_EQ(dst.to_vector(), src.transpose(0, 1).contiguous().to_vector());
}

TEST(Accumulate, ErrorsNameTheProblem) {
  Tensor f32 = Tensor::zeros({3}, DType::kF32, Device::cpu());
  testing::expect_mentions(testing::error_of([&] {
                             ops::accumulate_(Tensor::zeros({3, 2}, DType::kF32, Device::cpu()).transpose(0, 1),
                                              Tensor::zeros({2, 3}, DType::kF32, Device::cpu()));
                           }),
                           {"dst must be contiguous"});
  testing::expect_mentions(
      testing::error_of([&] { ops::accumulate_(Tensor::zeros({3}, DType::kI32, Device::cpu()), f32); }), {"dst"});
  testing::expect_mentions(
      testing::error_of([&] { ops::accumulate_(f32, Tensor::zeros({4}, DType::kF32, Device::cpu())); }),
      {"[3]", "[4]"});
}

}  // namespace
}  // namespace zt
