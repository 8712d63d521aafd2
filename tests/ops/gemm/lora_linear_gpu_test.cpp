// The fused LoRA linear on the GPU (cuBLASLt, the update summed by the GEMM epilogues) against
// the CPU reference from the same inputs, forward and backward, in bf16, fp16 and fp32, on
// awkward sizes. New GPU tensors start as NaN, so an output left unwritten fails.
#include <gtest/gtest.h>

#include <string>
#include <vector>

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

// q, k and v's updates stacked (ops::LoraStack) on the GPU against the CPU's.
TEST_F(LoraLinearGpu, StackedUpdatesMatchCpu) {
  ZT_SKIP_WITHOUT_GPU();
  const std::int64_t rows = 133, in = 72;
  const std::vector<std::int64_t> outs{72, 24, 24}, ranks{8, 8, 4};
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    CpuGpuPair x = random_pair({rows, in}, 90, dtype), held = random_pair({rows, in}, 91, dtype);
    std::vector<Tensor> as_cpu, as_gpu, bs_cpu, bs_gpu, gys_cpu, gys_gpu;
    for (std::size_t i = 0; i < outs.size(); ++i) {
      CpuGpuPair a = random_pair({ranks[i], in}, 100 + i, dtype), b = random_pair({outs[i], ranks[i]}, 110 + i, dtype);
      CpuGpuPair gy = random_pair({rows, outs[i]}, 120 + i, dtype);
      as_cpu.push_back(a.cpu), as_gpu.push_back(a.gpu), bs_cpu.push_back(b.cpu), bs_gpu.push_back(b.gpu);
      gys_cpu.push_back(gy.cpu), gys_gpu.push_back(gy.gpu);
    }
    const std::string what = dtype_name(dtype);
    const double tol = 2 * gpu_tolerance(dtype);
    const ops::LoraStack stack_cpu = ops::stack_lora(as_cpu, 2.0), stack_gpu = ops::stack_lora(as_gpu, 2.0);
    const Tensor down_cpu = ops::lora_stacked_down(x.cpu, stack_cpu),
                 down_gpu = ops::lora_stacked_down(x.gpu, stack_gpu);
    expect_gpu_matches(down_gpu, down_cpu, tol, what + " down");
    const ops::LoraStackGrads cpu = ops::lora_stack_backward(gys_cpu, x.cpu, bs_cpu, stack_cpu, down_cpu, held.cpu);
    const ops::LoraStackGrads gpu = ops::lora_stack_backward(gys_gpu, x.gpu, bs_gpu, stack_gpu, down_gpu, held.gpu);
    expect_gpu_matches(held.gpu, held.cpu, tol, what + " grad_x");
    for (std::size_t i = 0; i < outs.size(); ++i) {
      expect_gpu_matches(gpu.grad_a[i], cpu.grad_a[i], tol, what + " grad_a " + std::to_string(i));
      expect_gpu_matches(gpu.grad_b[i], cpu.grad_b[i], tol, what + " grad_b " + std::to_string(i));
    }
  }
}

}  // namespace
}  // namespace zt
