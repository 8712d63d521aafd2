// matmul and linear through cuBLASLt against the CPU reference from the same inputs: float32
// to 1e-5, bfloat16 to 1e-2, on awkward sizes, transposed and misaligned views, with the
// bias epilogue and in backward. New GPU tensors start as NaN, so unwritten outputs fail.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "ops/gemm/linear.h"
#include "ops/gemm/matmul.h"
#include "runtime/error.h"
#include "tests/common/op_test_util.h"
#include "tests/common/test_util.h"

namespace zt {
namespace {

using Pair = testing::CpuGpuPair;
using namespace testing;  // the helpers of tests/common/

class LinearGpu : public testing::PoisonedGpuTest {};

void check_linear(const Shape& x_shape, std::int64_t out, DType dtype, std::uint64_t seed) {
  std::int64_t in = x_shape.back();
  Pair x = random_pair(x_shape, seed, dtype), w = random_pair({out, in}, seed + 1, dtype);
  Pair b = random_pair({out}, seed + 2, dtype);
  Shape y_shape = x_shape;
  y_shape.back() = out;
  Pair gy = random_pair(y_shape, seed + 3, dtype);
  std::string what = std::string(dtype_name(dtype)) + " x " + shape_str(x_shape) + " out " + std::to_string(out);
  double tol = gpu_tolerance(dtype);
  expect_gpu_matches(ops::linear_forward(x.gpu, w.gpu, b.gpu), ops::linear_forward(x.cpu, w.cpu, b.cpu), tol,
                     what + " forward with bias");
  expect_gpu_matches(ops::linear_forward(x.gpu, w.gpu), ops::linear_forward(x.cpu, w.cpu), tol, what + " forward");
  ops::LinearGrads g = ops::linear_backward(gy.gpu, x.gpu, w.gpu, {.bias = true});
  ops::LinearGrads c = ops::linear_backward(gy.cpu, x.cpu, w.cpu, {.bias = true});
  expect_gpu_matches(g.grad_x, c.grad_x, tol, what + " grad_x");
  expect_gpu_matches(g.grad_weight, c.grad_weight, tol, what + " grad_weight");
  expect_gpu_matches(g.grad_bias, c.grad_bias, tol, what + " grad_bias");
}

TEST_F(LinearGpu, MatchesCpuOnAwkwardAndLargeShapes) {
  ZT_SKIP_WITHOUT_GPU();
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    check_linear({1, 7}, 33, dtype, 10);
    check_linear({3, 5, 7}, 33, dtype, 20);
    check_linear({7}, 1, dtype, 30);
    check_linear({257, 1000}, 513, dtype, 40);
  }
}

// The weight gradient added into a float32 sink by the GEMM (beta = 1), from 16-bit operands:
// sink + dyᵀ x against the CPU's float64, and no grad_weight returned.
TEST_F(LinearGpu, WeightGradientIntoAFloat32Sink) {
  ZT_SKIP_WITHOUT_GPU();
  for (DType dtype : {DType::kBF16, DType::kF16, DType::kF32}) {
    Pair x = random_pair({300, 72}, 50, dtype), gy = random_pair({300, 40}, 51, dtype);
    Tensor start = random_tensor({40, 72}, 52, DType::kF32);
    Tensor sink = start.to(Device::cuda());
    ops::LinearGrads g = ops::linear_backward(gy.gpu, x.gpu, Tensor(), {.x = false, .weight = true},
                                              {.grad_x = Tensor(), .weight_sink = sink});
    EXPECT_FALSE(g.grad_weight.defined());
    Tensor want =
        ops::linear_backward(gy.cpu.to(DType::kF64), x.cpu.to(DType::kF64), Tensor(), {.x = false, .weight = true})
            .grad_weight;
    std::vector<double> got = sink.to_vector(), reference = want.to_vector(), initial = start.to_vector();
    double worst = 0.0, scale = 0.0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      worst = std::max(worst, std::abs(got[i] - (initial[i] + reference[i])));
      scale = std::max(scale, std::abs(reference[i]));
    }
    EXPECT_LE(worst, 1e-5 * scale) << dtype_name(dtype) << ": the sum is kept in float32, never rounded to 16 bits";
  }
}

TEST_F(LinearGpu, BatchedMatmulEveryTransposeAndBroadcast) {
  ZT_SKIP_WITHOUT_GPU();
  struct Sizes {
    std::int64_t batch_a, batch_b, m, k, n;
  };
  for (DType dtype : {DType::kF32, DType::kBF16})
    for (Sizes s : {Sizes{3, 3, 1, 7, 33}, Sizes{3, 3, 5, 7, 33}, Sizes{3, 0, 5, 7, 33}, Sizes{0, 3, 5, 7, 33},
                    Sizes{0, 0, 1, 7, 33}, Sizes{2, 2, 65, 130, 47}})
      for (bool ta : {false, true})
        for (bool tb : {false, true}) {
          std::string what = std::string(dtype_name(dtype)) + " batch " + std::to_string(s.batch_a) + "/" +
                             std::to_string(s.batch_b) + " m" + std::to_string(s.m) + " ta " + std::to_string(ta) +
                             " tb " + std::to_string(tb);
          Pair a = random_pair(stored_operand_shape(s.batch_a, s.m, s.k, ta), 50, dtype);
          Pair b = random_pair(stored_operand_shape(s.batch_b, s.k, s.n, tb), 51, dtype);
          Tensor cpu = ops::matmul_forward(a.cpu, b.cpu, ta, tb);
          expect_gpu_matches(ops::matmul_forward(a.gpu, b.gpu, ta, tb), cpu, gpu_tolerance(dtype), what + " forward");
          Pair g = random_pair(cpu.shape(), 52, dtype);
          ops::MatmulGrads gg = ops::matmul_backward(g.gpu, a.gpu, b.gpu, ta, tb);
          ops::MatmulGrads cg = ops::matmul_backward(g.cpu, a.cpu, b.cpu, ta, tb);
          expect_gpu_matches(gg.grad_a, cg.grad_a, gpu_tolerance(dtype), what + " grad_a");
          expect_gpu_matches(gg.grad_b, cg.grad_b, gpu_tolerance(dtype), what + " grad_b");
        }
}

TEST_F(LinearGpu, TransposedStridedAndMisalignedViewsMatchContiguousCopies) {
  ZT_SKIP_WITHOUT_GPU();
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    Pair a_storage = random_pair({3, 9, 12}, 60, dtype), b_storage = random_pair({3, 10, 40}, 61, dtype);
    // Offsets of one element leave the data 2- or 4-byte aligned; the transpose makes `a`
    // column-major; `b` keeps a row stride of 40 for 33 columns.
    Tensor a = a_storage.gpu.narrow(1, 1, 7).narrow(2, 1, 5).transpose(1, 2);  // [3, 5, 7]
    Tensor b = b_storage.gpu.narrow(1, 3, 7).narrow(2, 1, 33);                 // [3, 7, 33]
    Tensor expected = ops::matmul_forward(a.contiguous(), b.contiguous());
    expect_gpu_matches(ops::matmul_forward(a, b), expected, 1e-6, std::string(dtype_name(dtype)) + " views");
    // Neither dim of unit stride: the one layout that must be copied.
    Tensor a_gappy = a_storage.gpu.slice(1, 0, 9, 2).slice(2, 0, 12, 2);                // [3, 5, 6]
    Tensor b_gappy = b_storage.gpu.narrow(1, 0, 6).slice(2, 0, 40, 3).narrow(2, 0, 4);  // [3, 6, 4]
    expect_gpu_matches(ops::matmul_forward(a_gappy, b_gappy),
                       ops::matmul_forward(a_gappy.contiguous(), b_gappy.contiguous()), 1e-6,
                       std::string(dtype_name(dtype)) + " copied views");
    // A transposed weight view and a strided x in linear, backward included.
    Tensor w = b_storage.gpu.select(0, 0).narrow(1, 0, 7).transpose(0, 1);  // [7, 10] column-major
    Tensor x = a_storage.gpu.select(0, 2).narrow(1, 2, 10);                 // [9, 10] row stride 12
    Tensor bias = b_storage.gpu.select(0, 1).select(0, 0).narrow(0, 1, 7);  // misaligned bias
    expect_gpu_matches(ops::linear_forward(x, w, bias),
                       ops::linear_forward(x.contiguous(), w.contiguous(), bias.contiguous()), 1e-6,
                       std::string(dtype_name(dtype)) + " linear views");
    Pair gy = random_pair({9, 7}, 62, dtype);
    ops::LinearGrads views =
        ops::linear_backward(gy.gpu.transpose(0, 1).contiguous().transpose(0, 1), x, w, {.bias = true});
    ops::LinearGrads copies = ops::linear_backward(gy.gpu, x.contiguous(), w.contiguous(), {.bias = true});
    expect_gpu_matches(views.grad_x, copies.grad_x, 1e-6, "grad_x of views");
    expect_gpu_matches(views.grad_weight, copies.grad_weight, 1e-6, "grad_weight of views");
    expect_gpu_matches(views.grad_bias, copies.grad_bias, 1e-6, "grad_bias of views");
  }
}

TEST_F(LinearGpu, Float64IsRefusedWithAClearError) {
  ZT_SKIP_WITHOUT_GPU();
  Tensor x = Tensor::zeros({2, 3}, DType::kF64, Device::cuda()), w = Tensor::zeros({4, 3}, DType::kF64, Device::cuda());
  try {
    ops::linear_forward(x, w);
    FAIL() << "float64 on the GPU must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("float64"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ops::linear_forward(x.to(DType::kF32), w.to(DType::kF32).to(Device::cpu())), Error);
}

}  // namespace
}  // namespace zt
