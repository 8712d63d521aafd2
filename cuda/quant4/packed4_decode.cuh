// Device-side decoding of a Packed4Weight, shared by the dequantize kernel, the 4-bit GEMV and
// the 4-bit GEMM so that all give each weight the same bits: the code books
// (ops/quant4/code_book_values.h, the CPU reference's numbers) in constant memory, a block's
// scale, decoded from its double quantization where the weight has one, and the roundings a
// weight value goes through on its way into a product (to the dtype the weight was quantized
// from, then to the activations'). Include from .cu files only (each gets its own copy of the
// constant tables).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "cuda/quant4/packed4.cuh"
#include "ops/quant4/code_book_values.h"

namespace zt::cuda {

static __constant__ ops::quant4::CodeBookValues kNf4Book = ops::quant4::kNf4Values;
static __constant__ ops::quant4::CodeBookValues kFp4Book = ops::quant4::kFp4Values;

__device__ __forceinline__ const float* code_book(const Packed4Weight& w) {
  return w.nf4 ? kNf4Book.values : kFp4Book.values;
}

// What a block's scale is made of, loaded: its absmax, or under double quantization its code
// in the nested map and its group's nested absmax. Loading and decoding apart let a kernel
// issue the loads early and decode when it needs the scale (with the map, say, in shared
// memory).
struct ScaleParts {
  float stored = 0.0f;  // absmax[block], or nested_absmax[block / nested_blocksize]
  unsigned code = 0;    // absmax_codes[block] (double quantization)
};

__device__ __forceinline__ ScaleParts load_scale_parts(const Packed4Weight& w, std::int64_t block) {
  if (w.absmax != nullptr) return {w.absmax[block], 0};
  return {w.nested_absmax[block / w.nested_blocksize], w.absmax_codes[block]};
}

// absmax, or nested_map[code] * nested_absmax + offset. The _rn intrinsics keep nvcc from
// fusing the two into one multiply-add, which would round once where bitsandbytes rounds twice.
__device__ __forceinline__ float decode_scale(const Packed4Weight& w, ScaleParts parts, const float* nested_map) {
  if (w.absmax != nullptr) return parts.stored;
  return __fadd_rn(__fmul_rn(nested_map[parts.code], parts.stored), w.nested_offset);
}

__device__ __forceinline__ float block_absmax(const Packed4Weight& w, std::int64_t block) {
  return decode_scale(w, load_scale_parts(w, block), w.nested_map);
}

template <typename D>
__device__ __forceinline__ float round_to(float v) {
  if constexpr (std::is_same_v<D, __nv_bfloat16>)
    return __bfloat162float(__float2bfloat16_rn(v));
  else if constexpr (std::is_same_v<D, __half>)
    return __half2float(__float2half_rn(v));
  else
    return v;
}

// A weight value as dequantize_4bit writes it in W and the GEMM then reads it in T. __fmul_rn:
// the product is rounded on its own, never fused with the multiply-add that follows.
template <typename T, typename W>
__device__ __forceinline__ float weight_value(const float* book, unsigned code, float scale) {
  const float value = __fmul_rn(book[code], scale);
  if constexpr (std::is_same_v<T, W>)
    return round_to<T>(value);
  else
    return round_to<T>(round_to<W>(value));
}

// Two values rounded to D and back, one conversion for the pair (the same bits as each alone).
template <typename D>
__device__ __forceinline__ void round_pair(float& a, float& b) {
  if constexpr (std::is_same_v<D, __nv_bfloat16>) {
    const __nv_bfloat162 pair = __floats2bfloat162_rn(a, b);
    a = __low2float(pair);
    b = __high2float(pair);
  } else if constexpr (std::is_same_v<D, __half>) {
    const __half2 pair = __floats2half2_rn(a, b);
    a = __low2float(pair);
    b = __high2float(pair);
  }
}

}  // namespace zt::cuda
