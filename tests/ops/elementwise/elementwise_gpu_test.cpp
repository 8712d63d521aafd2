// SwiGLU, elementwise arithmetic, casts, sums and means and dropout kernels against the CPU
// reference from the same inputs: float32 to 1e-5, 16-bit to 1e-2, awkward sizes, forward
// and backward; dropout masks bit for bit. New GPU tensors start as NaN, so unwritten
// outputs fail.
#include <gtest/gtest.h>

#include <string>

#include "ops/elementwise/dropout.h"
#include "ops/elementwise/elementwise.h"
#include "ops/reduce/reduce.h"
#include "ops/swiglu/swiglu.h"
#include "tests/common/op_test_util.h"
#include "tests/common/test_util.h"

namespace zt {
namespace {

using Pair = testing::CpuGpuPair;
using namespace testing;  // the helpers of tests/common/

class ElementwiseGpu : public testing::PoisonedGpuTest {};

const DType kDtypes[] = {DType::kF32, DType::kBF16, DType::kF16};

std::string name(const char* op, DType dtype, const Shape& shape) {
  return std::string(op) + " " + dtype_name(dtype) + " " + shape_str(shape);
}

// ---- SwiGLU ----

TEST_F(ElementwiseGpu, SwigluMatchesCpuInBothLayouts) {
  ZT_SKIP_WITHOUT_GPU();
  std::uint64_t seed = 1;
  for (const Shape& shape : {Shape{1, 1}, Shape{7, 300}, Shape{3, 5, 1001}, Shape{13}})
    for (DType dtype : kDtypes) {
      double tol = gpu_tolerance(dtype);
      Pair gate = random_pair(shape, seed++, dtype), up = random_pair(shape, seed++, dtype);
      Pair grad = random_pair(shape, seed++, dtype);
      expect_gpu_matches(ops::swiglu_forward(gate.gpu, up.gpu), ops::swiglu_forward(gate.cpu, up.cpu), tol,
                         name("swiglu", dtype, shape));
      ops::SwigluGrads g_gpu = ops::swiglu_backward(grad.gpu, gate.gpu, up.gpu);
      ops::SwigluGrads g_cpu = ops::swiglu_backward(grad.cpu, gate.cpu, up.cpu);
      expect_gpu_matches(g_gpu.grad_gate, g_cpu.grad_gate, tol, name("swiglu grad_gate", dtype, shape));
      expect_gpu_matches(g_gpu.grad_up, g_cpu.grad_up, tol, name("swiglu grad_up", dtype, shape));
      Shape fused_shape = shape;
      fused_shape.back() *= 2;
      Pair gate_up = random_pair(fused_shape, seed++, dtype);
      expect_gpu_matches(ops::swiglu_fused_forward(gate_up.gpu), ops::swiglu_fused_forward(gate_up.cpu), tol,
                         name("swiglu fused", dtype, fused_shape));
      expect_gpu_matches(ops::swiglu_fused_backward(grad.gpu, gate_up.gpu),
                         ops::swiglu_fused_backward(grad.cpu, gate_up.cpu), tol,
                         name("swiglu fused backward", dtype, fused_shape));
    }
}

// ---- add, sub, mul, scale, residual add, cast ----

TEST_F(ElementwiseGpu, BinaryOpsMatchCpuWithAndWithoutBroadcast) {
  ZT_SKIP_WITHOUT_GPU();
  std::uint64_t seed = 100;
  const std::pair<Shape, Shape> cases[] = {
      {{1}, {1}}, {{5, 7}, {5, 7}}, {{3, 100, 33}, {33}}, {{3, 100, 33}, {100, 33}}, {{1000, 3}, {}}, {{4099}, {4099}}};
  for (const auto& [a_shape, b_shape] : cases)
    for (DType dtype : kDtypes) {
      double tol = gpu_tolerance(dtype);
      std::string what = shape_str(a_shape) + " with " + shape_str(b_shape) + " " + dtype_name(dtype);
      Pair a = random_pair(a_shape, seed++, dtype), b = random_pair(b_shape, seed++, dtype, 1.0);
      Pair grad = random_pair(a_shape, seed++, dtype);
      expect_gpu_matches(ops::add_forward(a.gpu, b.gpu), ops::add_forward(a.cpu, b.cpu), tol, "add " + what);
      expect_gpu_matches(ops::sub_forward(a.gpu, b.gpu), ops::sub_forward(a.cpu, b.cpu), tol, "sub " + what);
      expect_gpu_matches(ops::mul_forward(a.gpu, b.gpu), ops::mul_forward(a.cpu, b.cpu), tol, "mul " + what);
      ops::BinaryGrads add_gpu = ops::add_backward(grad.gpu, b_shape), add_cpu = ops::add_backward(grad.cpu, b_shape);
      expect_gpu_matches(add_gpu.grad_a, add_cpu.grad_a, tol, "add grad_a " + what);
      expect_gpu_matches(add_gpu.grad_b, add_cpu.grad_b, tol, "add grad_b " + what);
      ops::BinaryGrads sub_gpu = ops::sub_backward(grad.gpu, b_shape), sub_cpu = ops::sub_backward(grad.cpu, b_shape);
      expect_gpu_matches(sub_gpu.grad_b, sub_cpu.grad_b, tol, "sub grad_b " + what);
      ops::BinaryGrads mul_gpu = ops::mul_backward(grad.gpu, a.gpu, b.gpu);
      ops::BinaryGrads mul_cpu = ops::mul_backward(grad.cpu, a.cpu, b.cpu);
      expect_gpu_matches(mul_gpu.grad_a, mul_cpu.grad_a, tol, "mul grad_a " + what);
      expect_gpu_matches(mul_gpu.grad_b, mul_cpu.grad_b, tol, "mul grad_b " + what);
    }
}

TEST_F(ElementwiseGpu, ScaleResidualAndCastMatchCpu) {
  ZT_SKIP_WITHOUT_GPU();
  std::uint64_t seed = 200;
  for (const Shape& shape : {Shape{1}, Shape{17, 33}, Shape{2, 3, 4097}})
    for (DType dtype : kDtypes) {
      double tol = gpu_tolerance(dtype);
      Pair x = random_pair(shape, seed++, dtype), y = random_pair(shape, seed++, dtype);
      expect_gpu_matches(ops::scale_forward(x.gpu, -0.37), ops::scale_forward(x.cpu, -0.37), tol,
                         name("scale", dtype, shape));
      expect_gpu_matches(ops::scale_backward(x.gpu, 3.5), ops::scale_backward(x.cpu, 3.5), tol,
                         name("scale backward", dtype, shape));
      expect_gpu_matches(ops::residual_add_forward(x.gpu, y.gpu), ops::residual_add_forward(x.cpu, y.cpu), tol,
                         name("residual_add", dtype, shape));
      for (DType target : kDtypes) {
        Tensor cast = ops::cast_forward(x.gpu, target);
        EXPECT_EQ(cast.dtype(), target);
        expect_no_nan(cast, name("cast", dtype, shape));
        EXPECT_EQ(cast.to_vector(), ops::cast_forward(x.cpu, target).to_vector()) << name("cast", dtype, shape);
        Tensor back = ops::cast_backward(cast, dtype);
        EXPECT_EQ(back.to_vector(), ops::cast_backward(ops::cast_forward(x.cpu, target), dtype).to_vector());
      }
    }
}

// ---- sum and mean ----

TEST_F(ElementwiseGpu, SumsAndMeansOverAllElementsMatchCpu) {
  ZT_SKIP_WITHOUT_GPU();
  std::uint64_t seed = 300;
  // 3M elements: more than the 1024 partial sums' share, so blocks grid-stride.
  for (const Shape& shape : {Shape{1}, Shape{1000}, Shape{3, 1000003}})
    for (DType dtype : kDtypes) {
      double tol = gpu_tolerance(dtype);
      Pair x = random_pair(shape, seed++, dtype, 0.5);
      // A float16 sum of millions of ~0.5 values overflows to inf on both sides; its mean is still tested.
      if (dtype != DType::kF16 || shape_numel(shape) < 60000)
        expect_gpu_matches(ops::sum_forward(x.gpu), ops::sum_forward(x.cpu), tol, name("sum", dtype, shape));
      expect_gpu_matches(ops::mean_forward(x.gpu), ops::mean_forward(x.cpu), tol, name("mean", dtype, shape));
      Pair g = random_pair({}, seed++, dtype, 1.0);
      expect_gpu_matches(ops::sum_backward(g.gpu, shape), ops::sum_backward(g.cpu, shape), tol,
                         name("sum backward", dtype, shape));
      expect_gpu_matches(ops::mean_backward(g.gpu, shape), ops::mean_backward(g.cpu, shape), tol,
                         name("mean backward", dtype, shape));
    }
  Pair big = random_pair({5000001}, 399, DType::kF32, 0.5);
  double first = ops::sum_forward(big.gpu).item();
  for (int run = 0; run < 3; ++run) EXPECT_EQ(ops::sum_forward(big.gpu).item(), first) << "sum is deterministic";
}

TEST_F(ElementwiseGpu, SumsAndMeansOverOneDimMatchCpu) {
  ZT_SKIP_WITHOUT_GPU();
  std::uint64_t seed = 400;
  for (const Shape& shape : {Shape{37, 129, 5}, Shape{1, 1}, Shape{2049, 3}, Shape{3, 5000}})
    for (DType dtype : kDtypes)
      for (std::int64_t dim = -1; dim < static_cast<std::int64_t>(shape.size()); ++dim)
        for (bool keepdim : {false, true}) {
          double tol = gpu_tolerance(dtype);
          std::string what = name("dim", dtype, shape) + " " + std::to_string(dim) + (keepdim ? " keepdim" : "");
          Pair x = random_pair(shape, seed++, dtype, 0.5);
          Tensor sum_cpu = ops::sum_dim_forward(x.cpu, dim, keepdim);
          expect_gpu_matches(ops::sum_dim_forward(x.gpu, dim, keepdim), sum_cpu, tol, "sum " + what);
          expect_gpu_matches(ops::mean_dim_forward(x.gpu, dim, keepdim), ops::mean_dim_forward(x.cpu, dim, keepdim),
                             tol, "mean " + what);
          Pair g = random_pair(sum_cpu.shape(), seed++, dtype, 1.0);
          expect_gpu_matches(ops::sum_dim_backward(g.gpu, shape, dim, keepdim),
                             ops::sum_dim_backward(g.cpu, shape, dim, keepdim), tol, "sum backward " + what);
          expect_gpu_matches(ops::mean_dim_backward(g.gpu, shape, dim, keepdim),
                             ops::mean_dim_backward(g.cpu, shape, dim, keepdim), tol, "mean backward " + what);
        }
}

// ---- dropout ----

TEST_F(ElementwiseGpu, DropoutMaskIsBitIdenticalToCpu) {
  ZT_SKIP_WITHOUT_GPU();
  std::uint64_t seed = 500;
  for (const Shape& shape : {Shape{1}, Shape{3, 333}, Shape{1000003}})
    for (DType dtype : kDtypes)
      for (double p : {0.0, 0.1, 0.5, 1.0}) {
        std::string what = name("dropout", dtype, shape) + " p " + std::to_string(p);
        Pair x = random_pair(shape, seed++, dtype);
        ops::DropoutConfig config{p, 0x1234567890ull + seed, 17 * seed};
        Tensor y = ops::dropout_forward(x.gpu, config);
        expect_no_nan(y, what);
        EXPECT_EQ(y.to_vector(), ops::dropout_forward(x.cpu, config).to_vector()) << what;
        Tensor g = ops::dropout_backward(x.gpu, config);
        EXPECT_EQ(g.to_vector(), ops::dropout_backward(x.cpu, config).to_vector()) << what << " backward";
      }
}

}  // namespace
}  // namespace zt
