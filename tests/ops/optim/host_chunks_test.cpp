// The host passes beside the CPU Adam: every element visited once, by fixed chunks, and a
// gradient norm over several chunks that matches float64 arithmetic and does not depend on
// how the chunks were dealt to threads.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <vector>

#include "ops/optim/host_chunks.h"
#include "ops/optim/l2norm.h"
#include "runtime/error.h"

namespace zt::ops {
namespace {

TEST(HostChunks, VisitsEveryElementOnceInFixedChunks) {
  const std::int64_t n = 2 * kHostChunkElements + 12345;
  std::vector<std::atomic<int>> visits(static_cast<std::size_t>(n));
  std::vector<std::int64_t> chunk_begin(3, -1);
  for_each_host_chunk(n, [&](std::int64_t begin, std::int64_t end, std::int64_t chunk) {
    chunk_begin[static_cast<std::size_t>(chunk)] = begin;
    EXPECT_EQ(end, std::min(n, begin + kHostChunkElements));
    for (std::int64_t i = begin; i < end; ++i) visits[static_cast<std::size_t>(i)]++;
  });
  EXPECT_EQ(chunk_begin, (std::vector<std::int64_t>{0, kHostChunkElements, 2 * kHostChunkElements}));
  for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(visits[static_cast<std::size_t>(i)], 1) << "element " << i;
}

TEST(HostChunks, EmptyAndSmallRangesRunOnTheCaller) {
  int calls = 0;
  for_each_host_chunk(0, [&](std::int64_t, std::int64_t, std::int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
  for_each_host_chunk(10, [&](std::int64_t begin, std::int64_t end, std::int64_t chunk) {
    ++calls;
    EXPECT_EQ(begin, 0);
    EXPECT_EQ(end, 10);
    EXPECT_EQ(chunk, 0);
  });
  EXPECT_EQ(calls, 1);
}

TEST(HostChunks, ZeroHostTensorClearsEveryByte) {
  Tensor t = Tensor::full({3 * kHostChunkElements + 7}, 1.5, DType::kF32);
  zero_host_tensor(t);
  const float* data = t.data<float>();
  for (std::int64_t i = 0; i < t.numel(); ++i) ASSERT_EQ(data[i], 0.0f) << "element " << i;
  Tensor strided = Tensor::zeros({4, 4}, DType::kF32).transpose(0, 1);
  EXPECT_THROW(zero_host_tensor(strided), Error);
}

// Large enough to be split: the norm equals a float64 sum (rounded to the float32 it is
// returned in), and repeated
// runs, whose chunks land on other threads, give the same bits.
TEST(HostChunks, NormOfASplitTensorIsFloat64AndRepeatable) {
  const std::int64_t n = 2 * kHostChunkElements + 999;
  Tensor t = Tensor::empty({n}, DType::kF32);
  float* data = t.data<float>();
  long double reference = 0.0L;
  for (std::int64_t i = 0; i < n; ++i) {
    data[i] = static_cast<float>(std::sin(0.001 * static_cast<double>(i)) * (1.0 + static_cast<double>(i % 7)));
    reference += static_cast<long double>(data[i]) * data[i];
  }
  const double norm = l2_norm({t}).to_vector().at(0);
  EXPECT_EQ(norm, static_cast<double>(static_cast<float>(std::sqrt(static_cast<double>(reference)))));
  for (int run = 0; run < 3; ++run) EXPECT_EQ(l2_norm({t}).to_vector().at(0), norm);
}

}  // namespace
}  // namespace zt::ops
