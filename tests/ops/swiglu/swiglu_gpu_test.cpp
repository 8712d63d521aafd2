// The SwiGLU kernels, split (gate, up) and fused ([gate | up]), against the CPU reference
// from the same inputs: float32 to 1e-5, 16-bit to 1e-2, forward and backward, on widths
// that take the 16-byte path and widths that cannot (and a misaligned view), each GPU result
// computed twice and required to repeat bit for bit; the backward that writes the forward's
// output again must give the forward kernel's output and the plain backward's gradient
// exactly. New GPU tensors start as NaN, so unwritten outputs fail.
#include <gtest/gtest.h>

#include <string>

#include "ops/swiglu/swiglu.h"
#include "tests/common/op_test_util.h"
#include "tests/common/test_util.h"

namespace zt {
namespace {

using testing::expect_gpu_matches;
using testing::gpu_tolerance;
using testing::random_pair;

class SwigluGpu : public testing::PoisonedGpuTest {};

const DType kDtypes[] = {DType::kF32, DType::kBF16, DType::kF16};

std::string name_of(std::int64_t rows, std::int64_t ffn, DType dtype, const char* layout) {
  return std::string(dtype_name(dtype)) + " " + layout + " rows " + std::to_string(rows) + " ffn " +
         std::to_string(ffn);
}

void expect_repeats(const Tensor& again, const Tensor& first, const std::string& what) {
  EXPECT_EQ(again.to_vector(), first.to_vector()) << what << ": two runs on the same inputs differ";
}

void check_split(std::int64_t rows, std::int64_t ffn, DType dtype, std::uint64_t seed) {
  std::string what = name_of(rows, ffn, dtype, "split");
  SCOPED_TRACE(what);
  auto gate = random_pair({rows, ffn}, seed, dtype), up = random_pair({rows, ffn}, seed + 1, dtype);
  auto grad = random_pair({rows, ffn}, seed + 2, dtype);
  double tol = gpu_tolerance(dtype);
  Tensor out = ops::swiglu_forward(gate.gpu, up.gpu);
  expect_gpu_matches(out, ops::swiglu_forward(gate.cpu, up.cpu), tol, what + " forward");
  expect_repeats(ops::swiglu_forward(gate.gpu, up.gpu), out, what + " forward");
  ops::SwigluGrads g_gpu = ops::swiglu_backward(grad.gpu, gate.gpu, up.gpu);
  ops::SwigluGrads g_cpu = ops::swiglu_backward(grad.cpu, gate.cpu, up.cpu);
  expect_gpu_matches(g_gpu.grad_gate, g_cpu.grad_gate, tol, what + " grad_gate");
  expect_gpu_matches(g_gpu.grad_up, g_cpu.grad_up, tol, what + " grad_up");
  ops::SwigluGrads again = ops::swiglu_backward(grad.gpu, gate.gpu, up.gpu);
  expect_repeats(again.grad_gate, g_gpu.grad_gate, what + " grad_gate");
  expect_repeats(again.grad_up, g_gpu.grad_up, what + " grad_up");
}

void check_fused(std::int64_t rows, std::int64_t ffn, DType dtype, std::uint64_t seed) {
  std::string what = name_of(rows, ffn, dtype, "fused");
  SCOPED_TRACE(what);
  auto gate_up = random_pair({rows, 2 * ffn}, seed, dtype), grad = random_pair({rows, ffn}, seed + 1, dtype);
  double tol = gpu_tolerance(dtype);
  Tensor out = ops::swiglu_fused_forward(gate_up.gpu);
  expect_gpu_matches(out, ops::swiglu_fused_forward(gate_up.cpu), tol, what + " forward");
  expect_repeats(ops::swiglu_fused_forward(gate_up.gpu), out, what + " forward");
  Tensor g_gpu = ops::swiglu_fused_backward(grad.gpu, gate_up.gpu);
  expect_gpu_matches(g_gpu, ops::swiglu_fused_backward(grad.cpu, gate_up.cpu), tol, what + " backward");
  expect_repeats(ops::swiglu_fused_backward(grad.gpu, gate_up.gpu), g_gpu, what + " backward");
  // The backward that writes the forward's output again: the same gradient, and the output bit
  // for bit the forward kernel's.
  ops::SwigluRecomputed recomputed = ops::swiglu_fused_backward_recomputing(grad.gpu, gate_up.gpu);
  expect_repeats(recomputed.grad_gate_up, g_gpu, what + " recomputing backward's gradient");
  expect_repeats(recomputed.out, out, what + " recomputing backward's output");
}

TEST_F(SwigluGpu, SplitAndFusedMatchCpuOnAwkwardShapes) {
  ZT_SKIP_WITHOUT_GPU();
  std::uint64_t seed = 1;
  for (std::int64_t rows : {1, 17, 2049})
    for (std::int64_t ffn : {1, 3, 17, 1000, 4097, 8192})
      for (DType dtype : kDtypes) {
        check_split(rows, ffn, dtype, seed += 3);
        check_fused(rows, ffn, dtype, seed += 3);
      }
}

TEST_F(SwigluGpu, MisalignedViewsTakeTheElementWisePath) {
  ZT_SKIP_WITHOUT_GPU();
  for (DType dtype : kDtypes) {
    // A column slice (which the op copies to contiguous) and a contiguous view that starts one
    // element past its allocation (which only the element-wise kernels may read).
    auto wide = random_pair({33, 1026}, 90, dtype), up = random_pair({33, 1025}, 91, dtype);
    Tensor gate_gpu = wide.gpu.narrow(1, 1, 1025), gate_cpu = wide.cpu.narrow(1, 1, 1025);
    expect_gpu_matches(ops::swiglu_forward(gate_gpu, up.gpu), ops::swiglu_forward(gate_cpu, up.cpu),
                       gpu_tolerance(dtype), std::string(dtype_name(dtype)) + " misaligned forward");
    Tensor flat = Tensor::empty({33 * 2048 + 1}, dtype, Device::cuda());
    Tensor shifted = flat.narrow(0, 1, 33 * 2048).view({33, 2048});
    auto source = random_pair({33, 2048}, 92, dtype);
    shifted.copy_from(source.gpu);
    expect_gpu_matches(ops::swiglu_fused_forward(shifted), ops::swiglu_fused_forward(source.cpu), gpu_tolerance(dtype),
                       std::string(dtype_name(dtype)) + " misaligned fused forward");
  }
}

}  // namespace
}  // namespace zt
