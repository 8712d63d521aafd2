// cuda/quant4's 4-bit GEMV (through Quant4Weight::linear) against the CPU reference: the weight
// dequantized by ops/quant4 and converted as the gather path converts it, then a matmul in
// double. NF4 and FP4, with and without double quantization, scale blocks of 64, 128 and 256,
// 1 to 8 rows, x in float32, bfloat16 and float16 from weights quantized out of each of the
// three, with and without a bias, on shapes the 16-byte path takes (K a multiple of 32; rows
// starting inside a scale block) and shapes it cannot (K = 70, an odd K whose rows share a
// byte).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "cuda/quant4/gemm4.cuh"
#include "cuda/quant4/gemv4.cuh"
#include "models/quant/quantized_weight.h"
#include "tests/common/test_util.h"
#include "tests/cuda/quant4/product_reference.h"

namespace zt::models::quant {
namespace {

struct Case {
  std::int64_t n, k;
};

std::string describe(const Case& c, Quant4Type type, bool nested, std::int64_t blocksize, DType stored, DType dtype,
                     std::int64_t rows, bool bias) {
  std::string text = std::to_string(c.n) + "x" + std::to_string(c.k);
  text += std::string(" ") + quant4_type_name(type) + (nested ? " nested" : "") + " blocksize ";
  text += std::to_string(blocksize) + " stored " + dtype_name(stored) + " x " + dtype_name(dtype) + " rows ";
  text += std::to_string(rows) + (bias ? " bias" : "");
  return text;
}

TEST(Gemv4Gpu, MatchesTheCpuReferenceUpToTheOrderOfTheSum) {
  ZT_SKIP_WITHOUT_GPU();
  const Case cases[] = {{72, 320}, {33, 96}, {5, 70}, {3, 37}};
  std::uint64_t seed = 1;
  for (const Case& c : cases)
    for (Quant4Type type : {Quant4Type::kNf4, Quant4Type::kFp4})
      for (bool nested : {true, false})
        for (std::int64_t blocksize : {64, 128, 256})
          for (DType stored : {DType::kF32, DType::kBF16, DType::kF16}) {
            const Tensor w = Tensor::normal({c.n, c.k}, seed++, 0, 0.0, 0.02, DType::kF32).to(stored);
            const Quant4Weight cpu =
                quantize_weight(w, {.type = type, .double_quant = nested, .blocksize = blocksize}, "w");
            const Quant4Weight gpu = cpu.to(Device::cuda());
            for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
              // What the gather path hands the GEMM: dequantized in the stored dtype, then converted.
              const Tensor dense = cpu.dequantize(stored).to(dtype);
              for (std::int64_t rows = 1; rows <= cuda::kGemv4MaxRows; ++rows)
                for (bool with_bias : {false, true}) {
                  const Tensor x = Tensor::normal({rows, c.k}, seed++, 0, 0.0, 1.0, DType::kF32).to(dtype);
                  const Tensor bias =
                      with_bias ? Tensor::normal({c.n}, seed++, 0, 0.0, 1.0, DType::kF32).to(dtype) : Tensor();
                  const Tensor y = gpu.linear(x.to(Device::cuda()), with_bias ? bias.to(Device::cuda()) : Tensor());
                  ASSERT_EQ(y.dtype(), dtype);
                  ASSERT_EQ(y.shape(), (Shape{rows, c.n}));
                  expect_near_reference(y, x, dense, bias,
                                        describe(c, type, nested, blocksize, stored, dtype, rows, with_bias));
                }
            }
          }
}

// With x one-hot per row, y[m, n] is a single product, 1 * w[n, k_m]: no sum to reorder, so it
// must equal the dequantized weight exactly, each value decoded and rounded (through the
// stored dtype, then x's) as dequantize_4bit and the conversion round it.
TEST(Gemv4Gpu, EachWeightIsTheDequantizedValueExactly) {
  ZT_SKIP_WITHOUT_GPU();
  const Case cases[] = {{72, 320}, {5, 70}};
  for (const Case& c : cases)
    ASSERT_NO_FATAL_FAILURE(for_each_format(
        {DType::kF32, DType::kBF16, DType::kF16}, [&](Quant4Type type, bool nested, DType stored, DType dtype) {
          const auto [cpu, dense] = quantized_with_outlier(c.n, c.k, type, nested, stored, dtype);
          const std::int64_t rows = cuda::kGemv4MaxRows;
          const OneHotRows hot = one_hot_rows(rows, c.k);
          const Tensor x = Tensor::from_values(hot.x, {rows, c.k}, DType::kF32).to(dtype);
          const std::vector<double> y =
              cpu.to(Device::cuda()).linear(x.to(Device::cuda())).to(Device::cpu(), DType::kF32).to_vector();
          const std::string what = describe(c, type, nested, 64, stored, dtype, rows, false);
          ASSERT_NO_FATAL_FAILURE(expect_picked_weights(y, dense, hot, c.n, c.k, what));
        }));
}

// More rows than the 4-bit kernels take, and float32 rows past the GEMV's (the GEMM takes
// bfloat16 and float16 only), go through the dequantized weight and cuBLASLt: the same values.
TEST(Gemv4Gpu, MoreRowsThanTheKernelsTakeDequantizeFirst) {
  ZT_SKIP_WITHOUT_GPU();
  const Tensor w = Tensor::normal({40, 128}, 9, 0, 0.0, 0.02, DType::kBF16);
  const Quant4Weight cpu = quantize_weight(w, {}, "w");
  for (const auto& [rows, dtype] :
       {std::pair{cuda::kGemm4MaxRows + 3, DType::kBF16}, std::pair{cuda::kGemv4MaxRows + 3, DType::kF32}}) {
    const Tensor x = Tensor::normal({rows, 128}, 10, 0, 0.0, 1.0, DType::kF32).to(dtype);
    const Tensor y = cpu.to(Device::cuda()).linear(x.to(Device::cuda()));
    ASSERT_EQ(y.shape(), (Shape{rows, 40}));
    expect_near_reference(y, x, cpu.dequantize(DType::kBF16).to(dtype), Tensor(),
                          std::to_string(rows) + " rows of " + dtype_name(dtype));
  }
}

}  // namespace
}  // namespace zt::models::quant
