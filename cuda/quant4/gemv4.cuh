// The product of a few activation rows with a weight held in bitsandbytes' 4 bits, without
// dequantizing the weight into memory: a decode step's linear on a 4-bit base.
//   y[m, n] = sum_k x[m, k] * W[n, k]  (+ bias[n])      m < rows <= kGemv4MaxRows
// W [N, K] is packed row-major as Packed4Weight describes it (weight.n == N * K; its scale
// blocks run over the flattened values, so a row may begin inside a block). Each weight value is
// the one dequantize_4bit gives: code_book[code] * scale in float (the scale decoded as there),
// rounded to weight_dtype (what the weight was dequantized to), then to x's dtype (what the
// GEMM would have read). Products and sums in float; the bias is added to the float sum before
// y is rounded, as cuBLASLt's bias epilogue does. The result is dequantize-then-GEMM's up to
// the order of the sum.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/quant4/packed4.cuh"
#include "runtime/dtype.h"

namespace zt::cuda {

inline constexpr std::int64_t kGemv4MaxRows = 8;

struct Gemv4Args {
  Packed4Weight weight;               // [out_features, in_features]
  std::int64_t rows = 0;              // 1..kGemv4MaxRows
  std::int64_t in_features = 0;       // K
  std::int64_t out_features = 0;      // N
  const void* x = nullptr;            // [rows, K] contiguous, of dtype
  const void* bias = nullptr;         // [N] of dtype, or null
  void* y = nullptr;                  // [rows, N] contiguous, of dtype
  DType dtype = DType::kBF16;         // x, bias and y: float32, bfloat16 or float16
  DType weight_dtype = DType::kBF16;  // the float dtype each weight value is rounded to first
};

void gemv_4bit(const Gemv4Args& args, cudaStream_t stream);

}  // namespace zt::cuda
