// What host_gradient_sink_test.cpp (chunks on the CPU) and host_gradient_sink_gpu_test.cpp
// (chunks on a GPU) hand the sink, and the partition ops::accumulate_ makes of it.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/elementwise/accumulate.h"
#include "tests/common/op_test_util.h"

namespace zt::train {

// The partition's length and that of each of the ten chunks added to it.
constexpr std::int64_t kPartition = 10'007, kChunk = 1'000;

// The float32 partition (seeded 1) after chunk i (of `dtype`, seeded 10 + i) is added at offset
// kChunk * i, i < 10.
inline std::vector<double> expected_partition(DType dtype) {
  Tensor partition = testing::random_tensor({kPartition}, 1, DType::kF32);
  for (std::int64_t i = 0; i < 10; ++i)
    ops::accumulate_(partition.narrow(0, i * kChunk, kChunk), testing::random_tensor({kChunk}, 10 + i, dtype));
  return partition.to_vector();
}

}  // namespace zt::train
