// cuda/quant4's dequantize kernel against the CPU reference (ops/quant4 through
// models/quant's Quant4Weight): bit for bit, for NF4 and FP4, with and without double
// quantization, into float32, bfloat16 and float16, on sizes that end mid-byte and mid-block,
// with zero and huge blocks.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "models/quant/quantized_weight.h"
#include "tests/common/test_util.h"

namespace zt::models::quant {
namespace {

Tensor weight(const Shape& shape, std::uint64_t seed) {
  Tensor w = Tensor::normal(shape, seed, 0, 0.0, 0.02, DType::kF32);
  float* values = w.data<float>();
  const std::int64_t n = w.numel();
  for (std::int64_t i = 0; i < std::min<std::int64_t>(n, 64); ++i) values[i] = 0.0f;  // a block of zeros
  if (n > 200) values[200] = 3.0e4f;                                                  // a huge value
  return w;
}

// Element bytes equal: the same bits (a -0 where the CPU has -0 too).
void expect_same_bits(const Tensor& gpu, const Tensor& cpu, const std::string& what) {
  const Tensor a = gpu.to(Device::cpu()).contiguous(), b = cpu.contiguous();
  ASSERT_EQ(a.shape(), b.shape()) << what;
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  const auto* x = static_cast<const unsigned char*>(a.data_ptr());
  const auto* y = static_cast<const unsigned char*>(b.data_ptr());
  const std::size_t size = dtype_size(a.dtype());
  for (std::int64_t i = 0; i < a.numel(); ++i)
    ASSERT_EQ(std::memcmp(x + i * size, y + i * size, size), 0) << what << " element " << i;
}

TEST(Dequantize4Gpu, MatchesTheCpuReferenceBitForBit) {
  ZT_SKIP_WITHOUT_GPU();
  for (const Shape& shape : {Shape{896, 896}, Shape{151, 129}, Shape{1, 1}, Shape{4864, 896}})
    for (Quant4Type type : {Quant4Type::kNf4, Quant4Type::kFp4})
      for (bool nested : {true, false})
        for (std::int64_t blocksize : {64, 256})
          for (DType weight_dtype : {DType::kF32, DType::kBF16}) {
            const Tensor w = weight(shape, 7).to(weight_dtype);
            const Quant4Weight cpu =
                quantize_weight(w, {.type = type, .double_quant = nested, .blocksize = blocksize}, "w");
            const Quant4Weight gpu = cpu.to(Device::cuda());
            for (DType out : {DType::kF32, DType::kBF16, DType::kF16}) {
              const std::string what = shape_str(shape) + " " + quant4_type_name(type) + (nested ? " nested" : "") +
                                       " blocksize " + std::to_string(blocksize) + " -> " + dtype_name(out);
              expect_same_bits(gpu.dequantize(out), cpu.dequantize(out), what);
            }
          }
}

}  // namespace
}  // namespace zt::models::quant
