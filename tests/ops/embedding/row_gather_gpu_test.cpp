// ops::gather_rows on the GPU against the CPU: one index copies rows bit for bit, two are
// summed in float and rounded once as on the CPU, -1 gives zero rows; every output row is
// written (new GPU tensors start as NaN).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ops/embedding/row_gather.h"
#include "tests/common/op_test_util.h"
#include "tests/common/test_util.h"

namespace zt {
namespace {

using namespace testing;  // the helpers of tests/common/

class RowGatherGpu : public PoisonedGpuTest {};

Tensor int32s(const std::vector<double>& values) {
  return Tensor::from_values(values, {static_cast<std::int64_t>(values.size())}, DType::kI32);
}

TEST_F(RowGatherGpu, MatchesCpu) {
  ZT_SKIP_WITHOUT_GPU();
  const std::int64_t rows = 37;
  std::vector<double> first, second;
  for (std::int64_t i = 0; i < 300; ++i) {
    first.push_back(static_cast<double>((i * 7) % (rows + 1)) - 1);  // -1 .. rows - 1
    second.push_back(i % 3 == 0 ? static_cast<double>((i * 5) % rows) : -1.0);
  }
  const Device gpu = Device::cuda(0);
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16})
    for (std::int64_t width : {1, 72, 1536}) {
      const CpuGpuPair x = random_pair({rows, width}, 5 + width, dtype);
      const std::string what = std::string(dtype_name(dtype)) + " width " + std::to_string(width);
      const Tensor one = ops::gather_rows(x.gpu, int32s(first).to(gpu));
      EXPECT_EQ(one.to(Device::cpu()).to_vector(), ops::gather_rows(x.cpu, int32s(first)).to_vector()) << what;
      const Tensor two = ops::gather_rows(x.gpu, int32s(first).to(gpu), int32s(second).to(gpu));
      EXPECT_EQ(two.to(Device::cpu()).to_vector(), ops::gather_rows(x.cpu, int32s(first), int32s(second)).to_vector())
          << what;
    }
}

}  // namespace
}  // namespace zt
