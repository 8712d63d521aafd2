#include <gtest/gtest.h>

#include <cmath>

#include "runtime/error.h"
#include "runtime/philox.h"
#include "tensor/tensor.h"

namespace zt {
namespace {

using Values = std::vector<double>;

TEST(TensorCopy, CastsBetweenEveryDTypePairOnStridedViews) {
  Values values = {0, 1, -2, 3.5, 100, -0.25, 7, 1e3, 2.5, -8, 0.5, 9};
  for (DType from : kAllDTypes) {
    for (DType to : kAllDTypes) {
      Tensor src = Tensor::from_values(values, {3, 4}, from).transpose(0, 1);  // [4, 3], strided
      Tensor dst = Tensor::empty({4, 3}, to).transpose(0, 1).transpose(0, 1);
      dst.copy_from(src);
      Values expected = Tensor::from_values(values, {3, 4}, from).to(to).transpose(0, 1).to_vector();
      std::vector<double> got = dst.to_vector();
      ASSERT_EQ(got.size(), 12u);
      for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(got[i], expected[i]) << dtype_name(from) << " -> " << dtype_name(to) << " at " << i;
    }
  }
}

TEST(TensorCopy, ConversionValuesFollowEachDType) {
  Tensor src = Tensor::from_values({-1.5, 0.0, 2.75, 300.0}, {4}, DType::kF64);
  EXPECT_EQ(src.to(DType::kI32).to_vector(), (Values{-1, 0, 2, 300}));
  EXPECT_EQ(src.to(DType::kBool).to_vector(), (Values{1, 0, 1, 1}));
  EXPECT_EQ(src.to(DType::kBF16).to_vector(), (Values{-1.5, 0.0, 2.75, 300.0}));
  Tensor third = Tensor::from_values({1.0 / 3.0}, {1}, DType::kF32);
  EXPECT_EQ(third.to(DType::kBF16).item(), 0.333984375);
  EXPECT_EQ(third.to(DType::kF16).item(), 0.333251953125);
}

TEST(TensorCopy, ShapeMismatchIsAnError) {
  Tensor a = Tensor::zeros({2, 3}, DType::kF32);
  Tensor b = Tensor::zeros({3, 2}, DType::kF32);
  try {
    a.copy_from(b);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[3, 2]"), std::string::npos);
  }
}

TEST(TensorCopy, FactoriesFillArangeAndBroadcastCopy) {
  EXPECT_EQ(Tensor::ones({2, 2}, DType::kI64).to_vector(), (Values{1, 1, 1, 1}));
  EXPECT_EQ(Tensor::full({3}, 2.5, DType::kF16).to_vector(), (Values{2.5, 2.5, 2.5}));
  EXPECT_EQ(Tensor::arange(5).to_vector(), (Values{0, 1, 2, 3, 4}));
  EXPECT_EQ(Tensor::arange(1, 2, 0.25, DType::kF32).to_vector(), (Values{1, 1.25, 1.5, 1.75}));
  EXPECT_EQ(Tensor::arange(3, 0, -1, DType::kI32).to_vector(), (Values{3, 2, 1}));
  EXPECT_EQ(Tensor::arange(0).numel(), 0);
  EXPECT_THROW(Tensor::arange(0, 1, 0, DType::kF32), Error);
  Tensor row = Tensor::from_values({1, 2, 3}, {3}, DType::kF32);
  Tensor grid = Tensor::empty({2, 3}, DType::kF32);
  grid.copy_from(row.expand({2, 3}));
  EXPECT_EQ(grid.to_vector(), (Values{1, 2, 3, 1, 2, 3}));
  Tensor clone = grid.clone();
  clone.fill_(0);
  EXPECT_EQ(grid.to_vector()[0], 1);
  EXPECT_EQ(grid.to(DType::kF32).storage(), grid.storage());
}

TEST(TensorCopy, RandomFactoriesDrawThePhiloxStream) {
  Tensor u = Tensor::uniform({5, 7}, 9, 3, -2.0, 2.0);
  std::vector<double> got = u.to_vector();
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], std::fmaf(philox::uniform(9, 3, i), 4.0f, -2.0f));
  Tensor n = Tensor::normal({1000}, 1, 0, 3.0, 0.5, DType::kBF16);
  double mean = 0;
  for (double x : n.to_vector()) mean += x / 1000;
  EXPECT_NEAR(mean, 3.0, 0.1);
  EXPECT_EQ(Tensor::uniform({4}, 9, 3).to_vector(), Tensor::uniform({4}, 9, 3).to_vector());
  EXPECT_NE(Tensor::uniform({4}, 9, 3).to_vector(), Tensor::uniform({4}, 9, 4).to_vector());
  EXPECT_THROW(Tensor::uniform({4}, 1, 0, 0, 1, DType::kI32), Error);
}

TEST(TensorCompare, AllcloseAndErrors) {
  Tensor a = Tensor::from_values({1, 2, 3}, {3}, DType::kF32);
  Tensor b = Tensor::from_values({1, 2, 3.001}, {3}, DType::kF64);
  EXPECT_TRUE(allclose(a, b, 1e-3));
  EXPECT_FALSE(allclose(a, b, 1e-5));
  EXPECT_NEAR(max_abs_diff(a, b), 0.001, 1e-9);
  EXPECT_NEAR(relative_error(a, b), 0.001 / std::sqrt(1 + 4 + 3.001 * 3.001), 1e-9);
  Tensor nan = Tensor::from_values({NAN, 2, 3}, {3}, DType::kF32);
  EXPECT_FALSE(allclose(nan, a));
  EXPECT_THROW(allclose(a, Tensor::zeros({2}, DType::kF32)), Error);
}

TEST(TensorPrint, NestedBracketsElisionAndDType) {
  Tensor t = Tensor::arange(0, 6, 1, DType::kF32).view({2, 3});
  EXPECT_EQ(t.str(), "tensor([[0.0000, 1.0000, 2.0000],\n        [3.0000, 4.0000, 5.0000]])");
  EXPECT_EQ(Tensor::arange(10).str(4), "tensor([0, 1, ..., 8, 9])");
  EXPECT_EQ(Tensor::ones({2}, DType::kBF16).str(), "tensor([1.0000, 1.0000], dtype=bfloat16)");
  EXPECT_EQ(Tensor().str(), "tensor(undefined)");
}

}  // namespace
}  // namespace zt
