// accumulate_ on the GPU against the CPU reference.
#include <gtest/gtest.h>

#include "ops/elementwise/accumulate.h"
#include "tests/common/op_test_util.h"
#include "tests/common/test_util.h"

namespace zt {
namespace {

class AccumulateGpu : public testing::PoisonedGpuTest {};

TEST_F(AccumulateGpu, MatchesCpuForEveryDtypePairAndAwkwardSizes) {
  ZT_SKIP_WITHOUT_GPU();
  for (DType dst_dtype : {DType::kF32, DType::kBF16, DType::kF16})
    for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
      for (std::int64_t n : {1, 17, 1000, 70001}) {
        auto dst = testing::random_pair({n}, 10 + n, dst_dtype);
        auto src = testing::random_pair({n}, 20 + n, dtype);
        ops::accumulate_(dst.cpu, src.cpu, 0.25);
        ops::accumulate_(dst.gpu, src.gpu, 0.25);
        EXPECT_EQ(dst.gpu.to_vector(), dst.cpu.to_vector())
            << dtype_name(dst_dtype) << " += " << dtype_name(dtype) << " n=" << n;
      }
    }
}

}  // namespace
}  // namespace zt
