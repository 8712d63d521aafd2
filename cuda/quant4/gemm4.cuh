// The product of a few dozen to a few hundred activation rows with a weight held in
// bitsandbytes' 4 bits, on tensor cores, without dequantizing the weight into memory: a
// linear on a 4-bit base at a batched decode step, a short prefill or an evaluation batch.
//   y[m, n] = sum_k x[m, k] * W[n, k]  (+ bias[n])
// W [N, K] is packed row-major as Packed4Weight describes it (weight.n == N * K; its scale
// blocks run over the flattened values, so a row may begin inside a block). Each weight value is
// the one dequantize_4bit gives, rounded to weight_dtype (what the weight was dequantized to),
// then to x's dtype (what the GEMM would have read), exactly as gemv_4bit takes it. The products
// run on mma.sync with fp32 accumulation; the bias is added to the fp32 sum before y is rounded,
// as cuBLASLt's bias epilogue does. The result is dequantize-then-GEMM's up to the order of the
// sum. x and y are bfloat16 or float16 (the tensor cores' inputs); float32 activations keep
// dequantize-then-GEMM.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/quant4/packed4.cuh"
#include "runtime/dtype.h"

namespace zt::cuda {

// The most rows a 4-bit linear multiplies on the packed weight with gemm_4bit; more rows
// dequantize the weight and run cuBLASLt, whose product then outweighs the dequantization's
// extra traffic. Set from bench/dequantize4_bench's gemm4 rows against dequantize_gemm on an
// H100 (Qwen2.5-7B's q, gate and down_proj): at 16 and 32 rows the GEMM is as fast or up to 1.8×
// faster (gate_proj 69 and 78 µs against 125), at 64 even to 9% slower, at 128 1.6–1.8× slower.
inline constexpr std::int64_t kGemm4MaxRows = 32;

struct Gemm4Args {
  Packed4Weight weight;               // [out_features, in_features]
  std::int64_t rows = 0;              // M, 1 or more
  std::int64_t in_features = 0;       // K
  std::int64_t out_features = 0;      // N
  const void* x = nullptr;            // [rows, K] contiguous, of dtype
  const void* bias = nullptr;         // [N] of dtype, or null
  void* y = nullptr;                  // [rows, N] contiguous, of dtype
  DType dtype = DType::kBF16;         // x, bias and y: bfloat16 or float16
  DType weight_dtype = DType::kBF16;  // the float dtype each weight value is rounded to first
  // Blocks K is split over for each tile of y, their fp32 partial sums added in split order by
  // a second kernel: 0 chooses from the shape and the GPU (splits where the tiles alone leave
  // SMs idle: a narrow weight, or a long K); a positive count forces it (the tests run both).
  int k_splits = 0;
};

// Whether gemm_4bit takes activations of `dtype`.
inline bool gemm_4bit_takes(DType dtype) { return dtype == DType::kBF16 || dtype == DType::kF16; }

void gemm_4bit(const Gemm4Args& args, cudaStream_t stream);

}  // namespace zt::cuda
