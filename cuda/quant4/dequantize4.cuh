// bitsandbytes' 4-bit weights (ops/quant4/blockwise.h) back to a float dtype on the GPU:
//   out[i] = code_book[code i] * absmax[i / blocksize]
// where absmax, under double quantization, is itself dequantized on the fly:
//   absmax[b] = nested_map[absmax_codes[b]] * nested_absmax[b / nested_blocksize] + offset
// each product and sum in float as bitsandbytes' kernels compute them, then rounded (to
// nearest even) to the output dtype: the same bits as the CPU reference. The transient full
// weight of one layer is what the GEMMs read (models/quant/).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/dtype.h"

namespace zt::cuda {

struct Dequantize4Args {
  const std::uint8_t* packed = nullptr;  // [(n + 1) / 2], first code in the high nibble
  bool nf4 = true;                       // else FP4
  std::int64_t n = 0;                    // values
  std::int64_t blocksize = 64;
  const float* absmax = nullptr;               // [blocks]; null under double quantization
  const std::uint8_t* absmax_codes = nullptr;  // [blocks] (double quantization)
  const float* nested_absmax = nullptr;        // [ceil(blocks / nested_blocksize)]
  const float* nested_map = nullptr;           // [256]
  float nested_offset = 0.0f;
  std::int64_t nested_blocksize = 256;
  void* out = nullptr;  // [n] contiguous, of out_dtype
  DType out_dtype = DType::kBF16;
};

void dequantize_4bit(const Dequantize4Args& args, cudaStream_t stream);

}  // namespace zt::cuda
