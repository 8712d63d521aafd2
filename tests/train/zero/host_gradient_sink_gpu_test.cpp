// The host gradient sink (train/zero/host_gradient_sink.h) from a GPU: device chunks, each
// made by device work still queued when it is handed over, more of them than the sink has
// page-locked slots, copied on the sink's stream and added by its thread, end bit for bit
// where ops::accumulate_ puts the same chunks on the CPU.
#include <gtest/gtest.h>

#include "ops/elementwise/elementwise.h"
#include "tests/common/op_test_util.h"
#include "tests/common/test_util.h"
#include "tests/train/zero/host_gradient_sink_test_util.h"
#include "train/zero/host_gradient_sink.h"

namespace zt::train {
namespace {

TEST(HostGradientSink, AddsDeviceChunksBehindTheCallerAsAccumulateDoes) {
  ZT_SKIP_WITHOUT_GPU();
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    Tensor partition = testing::random_tensor({kPartition}, 1, DType::kF32);
    HostGradientSink sink(3);
    for (std::int64_t i = 0; i < 10; ++i) {
      // Queued device work makes the chunk: x + 0, so the copy must wait for it.
      const Tensor x = testing::random_tensor({kChunk}, 10 + i, dtype).to(Device::cuda());
      sink.add(partition.narrow(0, i * kChunk, kChunk),
               ops::add_forward(x, Tensor::zeros({kChunk}, dtype, Device::cuda())));
    }
    sink.finish();
    EXPECT_EQ(partition.to_vector(), expected_partition(dtype)) << dtype_name(dtype);
    EXPECT_EQ(sink.stats().bytes, 10 * kChunk * static_cast<std::int64_t>(dtype_size(dtype)));
  }
}

}  // namespace
}  // namespace zt::train
