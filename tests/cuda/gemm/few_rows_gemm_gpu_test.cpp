// cuda/gemm/few_rows's GEMM against the CPU reference (x times W summed in double, up to the
// order of the sum and y's rounding): bfloat16 and float16, 1 to 32 rows (one or two row tiles of
// 16, part-filled), with and without a bias, K whole in each block, split over 3 and as the
// kernel chooses, on a part tile of columns with a part step of K (72 x 352), a narrow weight
// with a long K (136 x 4104) and Qwen2.5-1.5B's q/k/v (2048 x 1536), x rows a stride apart
// wider than K. y is filled with NaN first, so an output left unwritten fails. Then the SwiGLU
// epilogue against the linear kernel followed by cuda/swiglu (bit for bit: the same sums), the
// dispatch of ops::linear_forward and ops::linear_swiglu_forward (inside a FewRowsGemmScope the
// kernel's bits for a few rows, cuBLASLt's past them and outside the scope), and the products it
// refuses.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "cuda/gemm/few_rows/few_rows_gemm.cuh"
#include "ops/gemm/few_rows_product.h"
#include "ops/gemm/linear.h"
#include "ops/gemm/matmul_gemm.h"
#include "ops/swiglu/swiglu.h"
#include "runtime/error.h"
#include "runtime/streams/current_stream.h"
#include "tests/common/test_util.h"
#include "tests/cuda/quant4/product_reference.h"

namespace zt::cuda {
namespace {

using models::quant::expect_near_reference;

struct Case {
  std::int64_t n, k;
};

// y of the kernel called directly on device tensors, into a y filled with NaN first; x may be a
// view whose rows lie further apart than K.
Tensor few_rows(const Tensor& x, const Tensor& weight, const Tensor& bias, int k_splits,
                FewRowsOutput output = FewRowsOutput::kLinear) {
  const std::int64_t rows = x.size(0), n = weight.size(0);
  const std::int64_t columns = output == FewRowsOutput::kSwiglu ? n / 2 : n;
  Tensor y = Tensor::full({rows, columns}, std::numeric_limits<double>::quiet_NaN(), x.dtype(), Device::cuda());
  few_rows_gemm({.rows = rows,
                 .in_features = x.size(1),
                 .out_features = n,
                 .x = x.data_ptr(),
                 .x_row_stride = x.stride(0),
                 .weight = weight.data_ptr(),
                 .bias = bias.defined() ? bias.data_ptr() : nullptr,
                 .y = y.data_ptr(),
                 .dtype = x.dtype(),
                 .output = output,
                 .k_splits = k_splits},
                current_stream());
  return y;
}

// x's rows k apart inside rows of k + 24 elements: the kernel must follow x_row_stride.
Tensor strided_rows(std::int64_t rows, std::int64_t k, std::uint64_t seed, DType dtype) {
  const Tensor wide = Tensor::normal({rows, k + 24}, seed, 0, 0.0, 1.0, DType::kF32).to(dtype).to(Device::cuda());
  return wide.narrow(1, 8, k);
}

// The tensor cores' float adds may truncate where a float add rounds to nearest.
constexpr double kTensorCoreAddError = 0x1p-23;

TEST(FewRowsGemmGpu, MatchesTheCpuReferenceUpToTheOrderOfTheSum) {
  ZT_SKIP_WITHOUT_GPU();
  const Case cases[] = {{72, 352}, {136, 4104}, {2048, 1536}};
  std::uint64_t seed = 1;
  for (const Case& c : cases)
    for (DType dtype : {DType::kBF16, DType::kF16}) {
      const Tensor w = Tensor::normal({c.n, c.k}, seed++, 0, 0.0, 0.02, DType::kF32).to(dtype);
      const Tensor w_gpu = w.to(Device::cuda());
      for (std::int64_t rows : {1, 5, 16, 17, 32})
        for (bool with_bias : {false, true}) {
          const Tensor x = strided_rows(rows, c.k, seed++, dtype);
          const Tensor bias = with_bias ? Tensor::normal({c.n}, seed++, 0, 0.0, 1.0, DType::kF32).to(dtype) : Tensor();
          for (int k_splits : {1, 3, 0}) {
            const Tensor y = few_rows(x, w_gpu, with_bias ? bias.to(Device::cuda()) : Tensor(), k_splits);
            const std::string what = std::to_string(c.n) + "x" + std::to_string(c.k) + " " + dtype_name(dtype) + " " +
                                     std::to_string(rows) + " rows" + (with_bias ? " bias" : "") + " k_splits " +
                                     std::to_string(k_splits);
            ASSERT_NO_FATAL_FAILURE(expect_near_reference(y, x.to(Device::cpu()), w, bias, what, kTensorCoreAddError));
          }
        }
    }
}

// A split K's sum order is fixed by the shape: the same call twice gives the same bits.
TEST(FewRowsGemmGpu, ASplitKKeepsItsBitsRunToRun) {
  ZT_SKIP_WITHOUT_GPU();
  const Tensor w = Tensor::normal({136, 4104}, 7, 0, 0.0, 0.02, DType::kBF16, Device::cuda());
  const Tensor x = Tensor::normal({32, 4104}, 8, 0, 0.0, 1.0, DType::kBF16, Device::cuda());
  const std::vector<double> first = few_rows(x, w, Tensor(), 0).to(Device::cpu(), DType::kF32).to_vector();
  for (int run = 0; run < 3; ++run)
    EXPECT_EQ(few_rows(x, w, Tensor(), 0).to(Device::cpu(), DType::kF32).to_vector(), first) << "run " << run;
}

// [gate; up] of F = 200 (a part tile of 32 columns), with and without a bias, split and not:
// the epilogue's silu(gate) * up equals the linear kernel's [gate | up] through cuda/swiglu.
TEST(FewRowsGemmGpu, TheSwigluEpilogueEqualsTheProductThenSwiglu) {
  ZT_SKIP_WITHOUT_GPU();
  const std::int64_t ffn = 200, k = 1032;
  for (DType dtype : {DType::kBF16, DType::kF16})
    for (std::int64_t rows : {1, 8, 32})
      for (bool with_bias : {false, true})
        for (int k_splits : {1, 4}) {
          const Tensor w = Tensor::normal({2 * ffn, k}, 11, 0, 0.0, 0.05, DType::kF32).to(dtype).to(Device::cuda());
          const Tensor bias = with_bias
                                  ? Tensor::normal({2 * ffn}, 12, 0, 0.0, 1.0, DType::kF32).to(dtype).to(Device::cuda())
                                  : Tensor();
          const Tensor x = strided_rows(rows, k, 13, dtype);
          const Tensor product = few_rows(x, w, bias, k_splits);
          const std::vector<double> expected = ops::swiglu_fused_forward(product).to(Device::cpu()).to_vector();
          const std::vector<double> fused =
              few_rows(x, w, bias, k_splits, FewRowsOutput::kSwiglu).to(Device::cpu()).to_vector();
          EXPECT_EQ(fused, expected) << dtype_name(dtype) << " " << rows << " rows" << (with_bias ? " bias" : "")
                                     << " k_splits " << k_splits;
        }
}

// Inside a FewRowsGemmScope for every product, linear_forward gives a few rows the kernel (the
// direct call's bits, the split it chooses) and more rows cuBLASLt (the CPU reference's values);
// linear_swiglu_forward's few rows equal linear_forward then swiglu bit for bit, and on the CPU
// they are that composition. Outside a scope the product is cuBLASLt's; in a scope for SwiGLU
// only, the plain product is cuBLASLt's and the SwiGLU the kernel's; in one for SwiGLU and the
// long-K products, a product goes to the kernel exactly when its K exceeds its N.
TEST(FewRowsGemmGpu, TheLinearOpsTakeItForAFewRowsInsideAScope) {
  ZT_SKIP_WITHOUT_GPU();
  ops::FewRowsGemmScope routed(ops::FewRowsProducts::kAll);
  const Tensor w = Tensor::normal({512, 768}, 21, 0, 0.0, 0.03, DType::kBF16);
  const Tensor bias = Tensor::normal({512}, 22, 0, 0.0, 1.0, DType::kBF16);
  const Tensor w_gpu = w.to(Device::cuda()), bias_gpu = bias.to(Device::cuda());
  for (std::int64_t rows : {4, 32, 33}) {
    const Tensor x = Tensor::normal({rows, 768}, 23, 0, 0.0, 1.0, DType::kBF16);
    const Tensor x_gpu = x.to(Device::cuda());
    const Tensor y = ops::linear_forward(x_gpu, w_gpu, bias_gpu);
    if (rows <= kFewRowsGemmMaxRows) {
      EXPECT_EQ(y.to(Device::cpu()).to_vector(), few_rows(x_gpu, w_gpu, bias_gpu, 0).to(Device::cpu()).to_vector())
          << rows << " rows";
      const std::vector<double> cublas =
          ops::detail::gemm(x_gpu, false, w_gpu, true, bias_gpu).to(Device::cpu()).to_vector();
      {
        ops::FewRowsGemmScope outside(ops::FewRowsProducts::kNone);
        EXPECT_EQ(ops::linear_forward(x_gpu, w_gpu, bias_gpu).to(Device::cpu()).to_vector(), cublas)
            << rows << " rows outside the scope";
      }
      const std::vector<double> kernel_swiglu =
          few_rows(x_gpu, w_gpu, bias_gpu, 0, FewRowsOutput::kSwiglu).to(Device::cpu()).to_vector();
      {
        // Asked for SwiGLU only: the plain product stays cuBLASLt's, the SwiGLU is the kernel's.
        ops::FewRowsGemmScope swiglu_only(ops::FewRowsProducts::kSwiglu);
        EXPECT_EQ(ops::linear_forward(x_gpu, w_gpu, bias_gpu).to(Device::cpu()).to_vector(), cublas) << rows << " rows";
        EXPECT_EQ(ops::linear_swiglu_forward(x_gpu, w_gpu, bias_gpu).to(Device::cpu()).to_vector(), kernel_swiglu)
            << rows << " rows, SwiGLU only";
      }
      // Asked for SwiGLU and the products whose K exceeds N: w (K 768 > N 512) is the kernel's,
      // its transpose (K 512 < N 768) cuBLASLt's.
      ops::FewRowsGemmScope long_k(ops::FewRowsProducts::kSwigluAndLongK);
      EXPECT_EQ(ops::linear_forward(x_gpu, w_gpu, bias_gpu).to(Device::cpu()).to_vector(),
                few_rows(x_gpu, w_gpu, bias_gpu, 0).to(Device::cpu()).to_vector())
          << rows << " rows, long K";
      EXPECT_EQ(ops::linear_swiglu_forward(x_gpu, w_gpu, bias_gpu).to(Device::cpu()).to_vector(), kernel_swiglu)
          << rows << " rows, SwiGLU with the long-K products";
      const Tensor wide = w_gpu.transpose(0, 1).contiguous();
      const Tensor x_narrow = x_gpu.narrow(1, 0, 512).contiguous();
      EXPECT_EQ(ops::linear_forward(x_narrow, wide, Tensor()).to(Device::cpu()).to_vector(),
                ops::detail::gemm(x_narrow, false, wide, true, Tensor()).to(Device::cpu()).to_vector())
          << rows << " rows, K shorter than N";
    }
    ASSERT_NO_FATAL_FAILURE(expect_near_reference(y, x, w, bias, std::to_string(rows) + " rows", kTensorCoreAddError));
    const std::vector<double> fused = ops::linear_swiglu_forward(x_gpu, w_gpu, bias_gpu).to(Device::cpu()).to_vector();
    EXPECT_EQ(fused, ops::swiglu_fused_forward(y).to(Device::cpu()).to_vector()) << rows << " rows";
    EXPECT_EQ(ops::linear_swiglu_forward(x, w, bias).to_vector(),
              ops::swiglu_fused_forward(ops::linear_forward(x, w, bias)).to_vector())
        << rows << " rows on the CPU";
  }
}

// K not a multiple of 8 and float32 are refused by name by the kernel, and linear_forward
// then takes cuBLASLt: the values are still the reference's.
TEST(FewRowsGemmGpu, WhatItCannotTakeGoesToCublasLt) {
  ZT_SKIP_WITHOUT_GPU();
  const Tensor w = Tensor::normal({64, 100}, 31, 0, 0.0, 0.05, DType::kBF16);
  const Tensor x = Tensor::normal({4, 100}, 32, 0, 0.0, 1.0, DType::kBF16);
  const Tensor w_gpu = w.to(Device::cuda()), x_gpu = x.to(Device::cuda());
  try {
    few_rows(x_gpu, w_gpu, Tensor(), 0);
    FAIL() << "K = 100 was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("multiples of 8"), std::string::npos) << e.what();
  }
  ops::FewRowsGemmScope few_rows_asked(ops::FewRowsProducts::kAll);
  ASSERT_NO_FATAL_FAILURE(
      expect_near_reference(ops::linear_forward(x_gpu, w_gpu), x, w, Tensor(), "K = 100", kTensorCoreAddError));
  const Tensor w32 = w.to(DType::kF32), x32 = x.to(DType::kF32);
  ASSERT_NO_FATAL_FAILURE(expect_near_reference(ops::linear_forward(x32.to(Device::cuda()), w32.to(Device::cuda())),
                                                x32, w32, Tensor(), "float32", std::ldexp(1.0, -22)));
}

}  // namespace
}  // namespace zt::cuda
