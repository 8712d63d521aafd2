// In-place RoPE on q and k on the CPU: equal to the out-of-place op, head slices of a fused
// projection rotated where they are, and the layouts it refuses.
#include <gtest/gtest.h>

#include "ops/rope/rope.h"
#include "tests/common/op_test_util.h"

namespace zt {
namespace {

using testing::error_of;
using testing::expect_mentions;
using testing::random_tensor;

TEST(RopeInPlace, EqualsOutOfPlaceOnQAndKTogether) {
  for (ops::RopeConfig config : {ops::RopeConfig{ops::RopeStyle::kRotateHalf, 1e6, 1.0},
                                 ops::RopeConfig{ops::RopeStyle::kInterleaved, 1e4, 0.5}})
    for (DType dtype : {DType::kBF16, DType::kF32, DType::kF64}) {
      Tensor q = random_tensor({6, 4, 16}, 1, dtype), k = random_tensor({6, 2, 16}, 2, dtype);
      Tensor positions = Tensor::from_values({0, 1, 2, 0, 1, 700}, {6}, DType::kI64);
      Tensor q_ref = ops::rope_forward(q, positions, config), k_ref = ops::rope_forward(k, positions, config);
      ops::rope_forward_inplace(q, k, positions, config);
      EXPECT_EQ(q.to_vector(), q_ref.to_vector()) << dtype_name(dtype);
      EXPECT_EQ(k.to_vector(), k_ref.to_vector()) << dtype_name(dtype);
      Tensor q_back = ops::rope_backward(q, positions, config);
      ops::rope_backward_inplace(q, Tensor(), positions, config);
      EXPECT_EQ(q.to_vector(), q_back.to_vector()) << dtype_name(dtype);
    }
}

TEST(RopeInPlace, RotatesHeadSlicesOfAFusedProjectionWhereTheyAre) {
  Tensor qkv = random_tensor({5, 8, 8}, 3, DType::kF32);  // [tokens, 4 q + 2 k + 2 v heads, head_dim]
  Tensor original = qkv.clone();
  Tensor positions = Tensor::from_values({3, 4, 5, 6, 7}, {5}, DType::kI32);
  ops::RopeConfig config{ops::RopeStyle::kRotateHalf, 1e4, 1.0};
  Tensor q_ref = ops::rope_forward(original.narrow(1, 0, 4), positions, config);
  Tensor k_ref = ops::rope_forward(original.narrow(1, 4, 2), positions, config);
  ops::rope_forward_inplace(qkv.narrow(1, 0, 4), qkv.narrow(1, 4, 2), positions, config);
  EXPECT_EQ(qkv.narrow(1, 0, 4).to_vector(), q_ref.to_vector());
  EXPECT_EQ(qkv.narrow(1, 4, 2).to_vector(), k_ref.to_vector());
  EXPECT_EQ(qkv.narrow(1, 6, 2).to_vector(), original.narrow(1, 6, 2).to_vector()) << "v must be untouched";
}

TEST(RopeInPlace, RefusesLayoutsItCannotRotateInPlace) {
  Tensor x = random_tensor({4, 3, 8}, 4, DType::kF32);
  Tensor strided = random_tensor({4, 3, 16}, 6, DType::kF32).slice(2, 0, 16, 2);  // head dims 2 apart
  Tensor positions = Tensor::zeros({4}, DType::kI64);
  ops::RopeConfig config;
  expect_mentions(error_of([&] { ops::rope_forward_inplace(strided, Tensor(), positions, config); }),
                  {"rope_forward_inplace", "q", "strides", "out-of-place"});
  expect_mentions(error_of([&] {
                    ops::rope_forward_inplace(x, random_tensor({4, 3, 6}, 5, DType::kF32), positions, config);
                  }),
                  {"head_dim", "[4, 3, 6]"});
}

}  // namespace
}  // namespace zt
