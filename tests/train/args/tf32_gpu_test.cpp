// --tf32: float32 products on TF32 tensor cores when asked, float32-exact otherwise; bf16
// products are untouched either way.
#include <gtest/gtest.h>

#include "cuda/gemm/cublaslt_gemm.h"
#include "ops/gemm/matmul.h"
#include "tests/common/op_test_util.h"
#include "tests/common/test_util.h"

namespace zt {
namespace {

// The GPU product's relative error against the CPU's, with TF32 on or off.
double gpu_error(DType dtype, bool tf32) {
  const auto a = testing::random_pair({192, 512}, 11, dtype);
  const auto b = testing::random_pair({512, 160}, 12, dtype);
  const Tensor expected = ops::matmul_forward(a.cpu.to(DType::kF64), b.cpu.to(DType::kF64));
  cuda::set_float32_matmul_tf32(tf32);
  const Tensor got = ops::matmul_forward(a.gpu, b.gpu).to(Device::cpu()).to(DType::kF64);
  cuda::set_float32_matmul_tf32(false);
  return relative_error(got, expected);
}

TEST(Tf32Gpu, Float32ProductsUseTf32OnlyWhenAsked) {
  ZT_SKIP_WITHOUT_GPU();
  EXPECT_FALSE(cuda::float32_matmul_tf32());  // the default: float32-exact
  const double exact = gpu_error(DType::kF32, false);
  const double tf32 = gpu_error(DType::kF32, true);
  EXPECT_LE(exact, 1e-5);
  // TF32 keeps a 10-bit mantissa: errors near 2^-11 per input, far above float32's.
  EXPECT_GT(tf32, 10 * exact);
  EXPECT_GT(tf32, 2e-5);
  EXPECT_LT(tf32, 5e-3);
  EXPECT_FALSE(cuda::float32_matmul_tf32());
}

TEST(Tf32Gpu, HalfPrecisionProductsAreUnchanged) {
  ZT_SKIP_WITHOUT_GPU();
  EXPECT_EQ(gpu_error(DType::kBF16, true), gpu_error(DType::kBF16, false));
}

}  // namespace
}  // namespace zt
