// cuda/quant4's 4-bit GEMM against the CPU reference: the weight dequantized by ops/quant4 and
// converted as the gather path converts it, then a matmul in double. NF4 and FP4, with and
// without double quantization, weights quantized out of float32, bfloat16 and float16, x in
// bfloat16 and float16, 9 to 256 rows (one row tile of 16, 32 or 64, and several), with and
// without a bias, K whole in each block and split over several, on shapes the 16-byte path
// takes (K = 352: a half step of K at the end, rows starting inside a scale block; N = 72: a
// part tile of columns) and shapes it cannot (K = 200, and K = 37 whose rows share a byte). y
// is filled with NaN before each call, so an output the kernel leaves unwritten fails. Then a
// narrow weight with a long K, which the kernel splits by itself, and the dispatch:
// Quant4Weight::linear runs the GEMM for rows in its range (the same bits as the direct call).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cuda/quant4/gemm4.cuh"
#include "cuda/quant4/gemv4.cuh"
#include "models/quant/quantized_weight.h"
#include "runtime/error.h"
#include "runtime/streams/current_stream.h"
#include "tests/common/test_util.h"
#include "tests/cuda/quant4/product_reference.h"

namespace zt::models::quant {
namespace {

constexpr std::int64_t kRows[] = {9, 16, 32, 33, 100, 256};

struct Case {
  std::int64_t n, k;
};

// K whole in each block, and split over 3 (2 for K = 200, 1 for K = 37: whole steps of 64).
constexpr int kSplits[] = {1, 3};

std::string describe(const Case& c, Quant4Type type, bool nested, std::int64_t blocksize, DType stored, DType dtype,
                     std::int64_t rows, bool bias, int k_splits) {
  std::string text = std::to_string(c.n) + "x" + std::to_string(c.k);
  text += std::string(" ") + quant4_type_name(type) + (nested ? " nested" : "") + " blocksize ";
  text += std::to_string(blocksize) + " stored " + dtype_name(stored) + " x " + dtype_name(dtype) + " rows ";
  text += std::to_string(rows) + (bias ? " bias" : "") + " k_splits " + std::to_string(k_splits);
  return text;
}

// gemm_4bit on device tensors into a y filled with NaN first; K split over `k_splits` blocks
// (0: as the kernel chooses).
Tensor gemm4(const Quant4Weight& gpu, const Tensor& x, const Tensor& bias, int k_splits = 0) {
  const std::int64_t rows = x.size(0), n = gpu.state.shape[0];
  Tensor y = Tensor::full({rows, n}, std::numeric_limits<double>::quiet_NaN(), x.dtype(), Device::cuda());
  cuda::gemm_4bit({.weight = packed4_view(gpu),
                   .rows = rows,
                   .in_features = gpu.state.shape[1],
                   .out_features = n,
                   .x = x.data_ptr(),
                   .bias = bias.defined() ? bias.data_ptr() : nullptr,
                   .y = y.data_ptr(),
                   .dtype = x.dtype(),
                   .weight_dtype = gpu.state.dtype,
                   .k_splits = k_splits},
                  current_stream());
  return y;
}

// The tensor cores' float adds may truncate where a float add rounds to nearest: up to 2^-23
// of a partial sum instead of 2^-24.
constexpr double kTensorCoreAddError = 0x1p-23;

TEST(Gemm4Gpu, MatchesTheCpuReferenceUpToTheOrderOfTheSum) {
  ZT_SKIP_WITHOUT_GPU();
  const Case cases[] = {{72, 352}, {72, 200}, {130, 37}};
  std::uint64_t seed = 1;
  for (const Case& c : cases)
    for (Quant4Type type : {Quant4Type::kNf4, Quant4Type::kFp4})
      for (bool nested : {true, false})
        for (DType stored : {DType::kF32, DType::kBF16, DType::kF16}) {
          const std::int64_t blocksize = stored == DType::kF16 ? 128 : 64;
          const Tensor w = Tensor::normal({c.n, c.k}, seed++, 0, 0.0, 0.02, DType::kF32).to(stored);
          const Quant4Weight cpu =
              quantize_weight(w, {.type = type, .double_quant = nested, .blocksize = blocksize}, "w");
          const Quant4Weight gpu = cpu.to(Device::cuda());
          for (DType dtype : {DType::kBF16, DType::kF16}) {
            // What the gather path hands the GEMM: dequantized in the stored dtype, then converted.
            const Tensor dense = cpu.dequantize(stored).to(dtype);
            for (std::int64_t rows : kRows)
              for (bool with_bias : {false, true}) {
                const Tensor x = Tensor::normal({rows, c.k}, seed++, 0, 0.0, 1.0, DType::kF32).to(dtype);
                const Tensor bias =
                    with_bias ? Tensor::normal({c.n}, seed++, 0, 0.0, 1.0, DType::kF32).to(dtype) : Tensor();
                for (int k_splits : kSplits) {
                  const Tensor y =
                      gemm4(gpu, x.to(Device::cuda()), with_bias ? bias.to(Device::cuda()) : Tensor(), k_splits);
                  expect_near_reference(y, x, dense, bias,
                                        describe(c, type, nested, blocksize, stored, dtype, rows, with_bias, k_splits),
                                        kTensorCoreAddError);
                }
              }
          }
        }
}

// With x one-hot per row, y[m, n] is a single product, 1 * w[n, k_m], plus zeros: no sum to
// reorder, so it must equal the dequantized weight exactly, each value decoded and rounded
// (through the stored dtype, then x's) as dequantize_4bit and the conversion round it.
TEST(Gemm4Gpu, EachWeightIsTheDequantizedValueExactly) {
  ZT_SKIP_WITHOUT_GPU();
  const Case cases[] = {{72, 352}, {72, 200}};
  for (const Case& c : cases)
    ASSERT_NO_FATAL_FAILURE(
        for_each_format({DType::kBF16, DType::kF16}, [&](Quant4Type type, bool nested, DType stored, DType dtype) {
          const auto [cpu, dense] = quantized_with_outlier(c.n, c.k, type, nested, stored, dtype);
          const std::int64_t rows = 100;
          const OneHotRows hot = one_hot_rows(rows, c.k);
          const Tensor x = Tensor::from_values(hot.x, {rows, c.k}, dtype).to(Device::cuda());
          const Quant4Weight gpu = cpu.to(Device::cuda());
          for (int k_splits : kSplits) {
            const std::vector<double> y = gemm4(gpu, x, Tensor(), k_splits).to(Device::cpu(), DType::kF32).to_vector();
            const std::string what = describe(c, type, nested, 64, stored, dtype, rows, false, k_splits);
            ASSERT_NO_FATAL_FAILURE(expect_picked_weights(y, dense, hot, c.n, c.k, what));
          }
        }));
}

// One column tile and 64 steps of K: the kernel splits K over blocks to fill the GPU (8 splits
// of 8 steps), the same product as K whole.
TEST(Gemm4Gpu, ANarrowWeightWithALongKSplitsItByItself) {
  ZT_SKIP_WITHOUT_GPU();
  const Tensor w = Tensor::normal({64, 4096}, 31, 0, 0.0, 0.02, DType::kBF16);
  const Quant4Weight cpu = quantize_weight(w, {}, "w");
  const Quant4Weight gpu = cpu.to(Device::cuda());
  const Tensor dense = cpu.dequantize(DType::kBF16);
  for (std::int64_t rows : {std::int64_t{16}, std::int64_t{100}}) {
    const Tensor x = Tensor::normal({rows, 4096}, 32, 0, 0.0, 1.0, DType::kF32).to(DType::kBF16);
    const Tensor bias = Tensor::normal({64}, 33, 0, 0.0, 1.0, DType::kF32).to(DType::kBF16);
    for (int k_splits : {0, 1}) {
      const Tensor y = gemm4(gpu, x.to(Device::cuda()), bias.to(Device::cuda()), k_splits);
      expect_near_reference(y, x, dense, bias, std::to_string(rows) + " rows, k_splits " + std::to_string(k_splits),
                            kTensorCoreAddError);
    }
  }
}

// Quant4Weight::linear runs the GEMM for rows past the GEMV's up to kGemm4MaxRows in bfloat16
// and float16: its result has the direct call's bits (the kernel sums in a fixed order).
TEST(Gemm4Gpu, TheFourBitLinearRunsItForRowsInItsRange) {
  ZT_SKIP_WITHOUT_GPU();
  const Tensor w = Tensor::normal({96, 320}, 21, 0, 0.0, 0.02, DType::kBF16);
  const Quant4Weight gpu = quantize_weight(w, {}, "w").to(Device::cuda());
  for (DType dtype : {DType::kBF16, DType::kF16})
    for (std::int64_t rows : {cuda::kGemv4MaxRows + 1, std::int64_t{20}, cuda::kGemm4MaxRows}) {
      ASSERT_TRUE(multiplies_packed(rows, dtype));
      const Tensor x = Tensor::normal({rows, 320}, 22, 0, 0.0, 1.0, DType::kF32, Device::cuda()).to(dtype);
      const Tensor bias = Tensor::normal({96}, 23, 0, 0.0, 1.0, DType::kF32, Device::cuda()).to(dtype);
      const std::vector<double> direct = gemm4(gpu, x, bias).to(Device::cpu(), DType::kF32).to_vector();
      const std::vector<double> linear = gpu.linear(x, bias).to(Device::cpu(), DType::kF32).to_vector();
      ASSERT_EQ(direct.size(), linear.size());
      for (std::size_t i = 0; i < direct.size(); ++i)
        ASSERT_EQ(direct[i], linear[i]) << dtype_name(dtype) << " rows " << rows << " y element " << i;
    }
  EXPECT_FALSE(multiplies_packed(cuda::kGemm4MaxRows + 1, DType::kBF16));
  EXPECT_FALSE(multiplies_packed(cuda::kGemv4MaxRows + 1, DType::kF32)) << "float32 rows dequantize";
}

TEST(Gemm4Gpu, RefusesFloat32Activations) {
  ZT_SKIP_WITHOUT_GPU();
  const Quant4Weight gpu =
      quantize_weight(Tensor::normal({8, 64}, 1, 0, 0.0, 0.02, DType::kF32), {}, "w").to(Device::cuda());
  const Tensor x = Tensor::zeros({16, 64}, DType::kF32, Device::cuda());
  EXPECT_THROW(gemm4(gpu, x, Tensor()), Error);
}

}  // namespace
}  // namespace zt::models::quant
