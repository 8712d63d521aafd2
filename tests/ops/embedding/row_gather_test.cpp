// ops::gather_rows on the CPU: rows picked by one index are copied exactly, two indices are
// summed once in float and rounded, -1 picks nothing; bad indices are refused.
#include <gtest/gtest.h>

#include <vector>

#include "ops/embedding/row_gather.h"
#include "runtime/error.h"
#include "tests/common/op_test_util.h"

namespace zt {
namespace {

Tensor int32s(const std::vector<double>& values) {
  return Tensor::from_values(values, {static_cast<std::int64_t>(values.size())}, DType::kI32);
}

TEST(GatherRows, CopiesSumsAndSkipsRows) {
  const Tensor x = Tensor::from_values({1, 2, 3, 4, 5, 6}, {3, 2}, DType::kF32);
  EXPECT_EQ(ops::gather_rows(x, int32s({2, 0, 2, -1})).to_vector(), (std::vector<double>{5, 6, 1, 2, 5, 6, 0, 0}));
  EXPECT_EQ(ops::gather_rows(x, int32s({0, -1, 1}), int32s({2, 1, -1})).to_vector(),
            (std::vector<double>{6, 8, 3, 4, 3, 4}));
  // bfloat16: 256 + 1 rounds to 256 once (not 256 + 0.5 + 0.5 twice).
  const Tensor b = Tensor::from_values({256, 1, 0.5, 0.5}, {4, 1}, DType::kBF16);
  EXPECT_EQ(ops::gather_rows(b, int32s({0, 2}), int32s({1, 3})).to_vector(), (std::vector<double>{256, 1}));
  EXPECT_EQ(ops::gather_rows(b, int32s({1})).dtype(), DType::kBF16);
}

TEST(GatherRows, RefusesBadIndices) {
  const Tensor x = testing::random_tensor({3, 2}, 1);
  EXPECT_THROW(ops::gather_rows(x, int32s({3})), Error);
  EXPECT_THROW(ops::gather_rows(x, int32s({-2})), Error);
  EXPECT_THROW(ops::gather_rows(x, int32s({0, 1}), int32s({0})), Error);
  EXPECT_THROW(ops::gather_rows(x, Tensor::from_values({0}, {1}, DType::kI64)), Error);
  EXPECT_THROW(ops::gather_rows(testing::random_tensor({3}, 2), int32s({0})), Error);
}

}  // namespace
}  // namespace zt
