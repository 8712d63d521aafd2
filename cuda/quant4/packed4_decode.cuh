// Device-side decoding of a Packed4Weight, shared by the dequantize kernel and the 4-bit GEMV so
// that both give each weight the same bits: the code books (ops/quant4/code_book_values.h, the
// CPU reference's numbers) in constant memory, and a block's scale, decoded from its double
// quantization where the weight has one. Include from .cu files only (each gets its own copy
// of the constant tables).
#pragma once

#include <cstdint>

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

}  // namespace zt::cuda
