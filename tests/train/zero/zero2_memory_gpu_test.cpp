// ZeRO stage 2 on one GPU in bf16, measured by the device allocator (runtime/memory/): on one
// rank and on two ranks sharing the GPU, starting up adds the state of the owned elements
// (16 bytes each on one rank, 14 on two, whose gradient partition is bf16) and nothing else, and training with
// accumulation and overlap_comm peaks within that, two bf16 gradient buckets and a chunk per rank, and what backward
// itself needs; a full-size fp32 gradient (4 bytes a parameter, per rank) would exceed it.
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>

#include "autograd/functions.h"
#include "distributed/communicators/inprocess_communicator.h"
#include "runtime/memory/caching_allocator.h"
#include "tests/common/op_test_util.h"
#include "tests/common/test_util.h"
#include "tests/train/zero/stage2_test_util.h"
#include "train/zero/zero_optimizer.h"

namespace zt::train {
namespace {

using namespace std::chrono_literals;

constexpr std::int64_t kWidth = 1024, kLayers = 8;
constexpr std::int64_t kPsi = kLayers * (kWidth * kWidth + kWidth);
constexpr std::int64_t kBucket = 3 * kWidth * kWidth / 2;  // about one and a half layers
constexpr std::int64_t kMiB = 1 << 20;

// kLayers of linear(kWidth -> kWidth) with bias and tanh, in bf16 on the GPU.
struct Layers : TanhLayers {
  Layers()
      : TanhLayers({.layers = kLayers,
                    .width = kWidth,
                    .rows = 64,
                    .dtype = DType::kBF16,
                    .device = Device::cuda(),
                    .weight_std = 0.03,
                    .bias_seed = 30}) {}
};

TEST(Zero2Gpu, HoldsItsPartitionAndTwoBucketsAsTheAllocatorMeasures) {
  ZT_SKIP_WITHOUT_GPU();
  for (int world : {1, 2}) {
    std::vector<Layers> models(static_cast<std::size_t>(world));
    CachingDeviceAllocator& allocator = device_allocator(0);
    const std::int64_t before = static_cast<std::int64_t>(allocator.stats().allocated_bytes);
    std::mutex mutex;
    std::int64_t state = 0, staging = 0;
    distributed::run_inprocess_ranks(world, 120s, [&](distributed::Communicator& comm) {
      Layers& model = models[static_cast<std::size_t>(comm.rank())];
      ZeroOptimizer optimizer(model.parameters(), OptimizerConfig{}, comm, 2, kBucket, {}, {.overlap = true});
      comm.barrier();
      {
        std::lock_guard<std::mutex> lock(mutex);
        // fp32 master and moments; the gradient partition is bf16 over 2 ranks (DeepSpeed's
        // grad_accum_dtype), fp32 on one.
        state += (12 + (world > 1 ? 2 : 4)) * optimizer.layout().partition_numel;
        staging += staging_bound(optimizer.layout(), 2);  // bf16 buckets
      }
      comm.barrier();
      if (comm.rank() == 0) {
        const std::int64_t started = static_cast<std::int64_t>(allocator.stats().allocated_bytes) - before;
        EXPECT_LE(started, state + kMiB) << "world " << world;
        EXPECT_GE(started, state) << "world " << world;
        allocator.reset_peak_stats();
      }
      comm.barrier();
      for (int step = 1; step <= 2; ++step) {
        for (int micro = 0; micro < 2; ++micro) {
          model.backward(comm.rank(), micro + 10 * step);
          optimizer.end_micro_batch();
        }
        optimizer.step(1e-4, 1.0, 1.0, step);
        optimizer.zero_grad();
      }
      std::lock_guard<std::mutex> lock(mutex);
      EXPECT_LE(optimizer.most_staged_gradient_bytes(), staging_bound(optimizer.layout(), 2)) << "world " << world;
    });
    // What backward itself holds per rank: a layer's bf16 gradients and the small activations.
    const std::int64_t backward = 8 * kMiB;
    const std::int64_t peak = static_cast<std::int64_t>(allocator.stats().peak_allocated_bytes) - before;
    EXPECT_LE(peak, state + staging + world * backward) << "world " << world;
    EXPECT_LT(state + staging + world * backward, 16 * kPsi + world * 4 * kPsi)
        << "the bound must be tighter than a full fp32 gradient per rank";
  }
}

}  // namespace
}  // namespace zt::train
