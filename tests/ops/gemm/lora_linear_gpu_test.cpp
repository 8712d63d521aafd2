// The fused LoRA linear on the GPU (cuBLASLt, the update summed by the GEMM epilogues) against
// the CPU reference from the same inputs, forward and backward, in bf16, fp16 and fp32, on
// awkward sizes. New GPU tensors start as NaN, so an output left unwritten fails.
#include <gtest/gtest.h>

#include <string>

#include "ops/gemm/lora_linear.h"
#include "tests/common/op_test_util.h"
#include "tests/common/test_util.h"

namespace zt {
namespace {

using namespace testing;  // the helpers of tests/common/

class LoraLinearGpu : public PoisonedGpuTest {};

void check(std::int64_t rows, std::int64_t in, std::int64_t out, std::int64_t rank, DType dtype, std::uint64_t seed) {
  CpuGpuPair x = random_pair({rows, in}, seed, dtype), w = random_pair({out, in}, seed + 1, dtype);
  CpuGpuPair bias = random_pair({out}, seed + 2, dtype), a = random_pair({rank, in}, seed + 3, dtype);
  CpuGpuPair b = random_pair({out, rank}, seed + 4, dtype), gy = random_pair({rows, out}, seed + 5, dtype);
  const std::string what = std::string(dtype_name(dtype)) + " rows " + std::to_string(rows) + " in " +
                           std::to_string(in) + " out " + std::to_string(out) + " rank " + std::to_string(rank);
  const double tol = 2 * gpu_tolerance(dtype);
  ops::LoraLinearOutput g = ops::lora_linear_forward(x.gpu, w.gpu, bias.gpu, a.gpu, b.gpu, 2.0);
  ops::LoraLinearOutput c = ops::lora_linear_forward(x.cpu, w.cpu, bias.cpu, a.cpu, b.cpu, 2.0);
  expect_gpu_matches(g.y, c.y, tol, what + " y");
  const ops::LinearGradsNeeded needed{.x = true, .weight = false, .bias = true};
  ops::LoraLinearGrads gg = ops::lora_linear_backward(gy.gpu, x.gpu, w.gpu, a.gpu, b.gpu, g.down, 2.0, needed);
  ops::LoraLinearGrads cg = ops::lora_linear_backward(gy.cpu, x.cpu, w.cpu, a.cpu, b.cpu, c.down, 2.0, needed);
  expect_gpu_matches(gg.base.grad_x, cg.base.grad_x, tol, what + " grad_x");
  expect_gpu_matches(gg.base.grad_bias, cg.base.grad_bias, tol, what + " grad_bias");
  expect_gpu_matches(gg.grad_a, cg.grad_a, tol, what + " grad_a");
  expect_gpu_matches(gg.grad_b, cg.grad_b, tol, what + " grad_b");
}

TEST_F(LoraLinearGpu, MatchesCpuOnAwkwardShapes) {
  ZT_SKIP_WITHOUT_GPU();
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    check(37, 72, 50, 3, dtype, 10);
    check(1, 8, 5, 1, dtype, 20);
    check(300, 256, 136, 8, dtype, 30);
  }
}

}  // namespace
}  // namespace zt
