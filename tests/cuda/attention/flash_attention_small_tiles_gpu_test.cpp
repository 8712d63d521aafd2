// The tensor-core attention backward with the tiles sm_86 and sm_89 (A10, A40, L40, RTX 30xx
// and 40xx) get: their blocks have at most 99 KiB of shared memory, less than the widest tiles
// need at head_dim 96 and 128, so the kernels launch narrower ones there. A cap on the limit the
// kernels read (cuda/common/shared_memory_limit.h) makes a larger GPU run those narrower tiles,
// which must give the CPU reference's gradients, atomic and deterministic, as the wide ones do.
#include <gtest/gtest.h>

#include <cstdint>

#include "cuda/common/shared_memory_limit.h"
#include "tests/common/op_test_util.h"
#include "tests/common/test_util.h"
#include "tests/ops/attention/attention_test_util.h"

namespace zt {
namespace {

using testing::AttentionCase;
using testing::check_attention_against_cpu;

class FlashAttentionSmallTilesGpu : public testing::PoisonedGpuTest {};

AttentionCase deterministic(AttentionCase c) {
  c.deterministic = true;
  return c;
}

TEST_F(FlashAttentionSmallTilesGpu, TheCapLowersTheLimitTheKernelsRead) {
  ZT_SKIP_WITHOUT_GPU();
  const std::size_t device_limit = cuda::block_shared_memory_limit();
  EXPECT_GE(device_limit, cuda::kSmallestBlockSharedMemory) << "a GPU of compute capability 8.0 or newer";
  {
    cuda::SharedMemoryLimitCap cap(cuda::kSmallestBlockSharedMemory);
    EXPECT_EQ(cuda::block_shared_memory_limit(), cuda::kSmallestBlockSharedMemory);
  }
  EXPECT_EQ(cuda::block_shared_memory_limit(), device_limit) << "the cap ends with its scope";
}

TEST_F(FlashAttentionSmallTilesGpu, EveryHeadDimAndBackwardModeWithin99KiB) {
  ZT_SKIP_WITHOUT_GPU();
  cuda::SharedMemoryLimitCap cap(cuda::kSmallestBlockSharedMemory);
  std::uint64_t seed = 7000;
  for (std::int64_t head_dim : {64, 96, 128})
    for (DType dtype : {DType::kBF16, DType::kF16}) {
      // Uneven lengths (tail tiles), GQA 2:1, a prefix; causal and full.
      const AttentionCase c{{1, 17, 130, 64, 300}, 4, 2, head_dim, 3, true};
      check_attention_against_cpu(c, dtype, seed += 20);
      AttentionCase full = deterministic(c);
      full.causal = false;
      check_attention_against_cpu(full, dtype, seed += 20);
    }
  // One long sequence crosses many of the narrower key and query tiles.
  check_attention_against_cpu({{1000}, 8, 1, 128, 0, true}, DType::kBF16, seed += 20);
  check_attention_against_cpu(deterministic({{1000}, 4, 2, 96, 0, true}), DType::kBF16, seed += 20);
}

}  // namespace
}  // namespace zt
