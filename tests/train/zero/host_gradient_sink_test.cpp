// The host gradient sink (train/zero/host_gradient_sink.h) on the CPU: chunks of any float
// dtype added to a float32 host partition by several threads equal ops::accumulate_ bit for
// bit. host_gradient_sink_gpu_test.cpp has the same from a GPU.
#include <gtest/gtest.h>

#include "tests/common/op_test_util.h"
#include "tests/train/zero/host_gradient_sink_test_util.h"
#include "train/zero/host_gradient_sink.h"

namespace zt::train {
namespace {

TEST(HostGradientSink, AddsChunksOnTheCpuAsAccumulateDoes) {
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    Tensor partition = testing::random_tensor({kPartition}, 1, DType::kF32);
    HostGradientSink sink(3);
    for (std::int64_t i = 0; i < 10; ++i)
      sink.add(partition.narrow(0, i * kChunk, kChunk), testing::random_tensor({kChunk}, 10 + i, dtype));
    sink.finish();
    EXPECT_EQ(partition.to_vector(), expected_partition(dtype)) << dtype_name(dtype);
    EXPECT_EQ(sink.stats().chunks, 10);
    EXPECT_EQ(sink.stats().bytes, 0) << "nothing crossed from a device";
    EXPECT_DOUBLE_EQ(sink.stats().hidden(), 0.0) << "on the CPU the caller waits for every addition";
  }
}

}  // namespace
}  // namespace zt::train
