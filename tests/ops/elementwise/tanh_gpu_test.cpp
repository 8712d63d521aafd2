// The tanh kernels against the CPU reference from the same inputs: float32 to 1e-5, 16-bit
// to 1e-2, awkward sizes, forward and backward. New GPU tensors start as NaN, so unwritten
// outputs fail.
#include <gtest/gtest.h>

#include <string>

#include "ops/elementwise/tanh.h"
#include "tests/common/op_test_util.h"
#include "tests/common/test_util.h"

namespace zt {
namespace {

using Pair = testing::CpuGpuPair;
using namespace testing;  // the helpers of tests/common/

class TanhGpu : public testing::PoisonedGpuTest {};

TEST_F(TanhGpu, ForwardAndBackwardMatchCpu) {
  ZT_SKIP_WITHOUT_GPU();
  std::uint64_t seed = 1;
  for (const Shape& shape : {Shape{1}, Shape{7, 300}, Shape{3, 5, 1001}, Shape{4099}})
    for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
      const double tol = gpu_tolerance(dtype);
      const std::string what = std::string(dtype_name(dtype)) + " " + shape_str(shape);
      Pair x = random_pair(shape, seed++, dtype), grad = random_pair(shape, seed++, dtype);
      Tensor out_cpu = ops::tanh_forward(x.cpu);
      expect_gpu_matches(ops::tanh_forward(x.gpu), out_cpu, tol, "tanh " + what);
      // Both backwards from the same output, so only the backward kernel is compared.
      expect_gpu_matches(ops::tanh_backward(grad.gpu, out_cpu.to(Device::cuda())),
                         ops::tanh_backward(grad.cpu, out_cpu), tol, "tanh backward " + what);
    }
}

}  // namespace
}  // namespace zt
