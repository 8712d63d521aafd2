// bitsandbytes' 4-bit weights (ops/quant4/blockwise.h) back to a float dtype on the GPU:
//   out[i] = code_book[code i] * absmax[i / blocksize]
// where absmax, under double quantization, is itself dequantized on the fly:
//   absmax[b] = nested_map[absmax_codes[b]] * nested_absmax[b / nested_blocksize] + offset
// each product and sum in float as bitsandbytes' kernels compute them, then rounded (to
// nearest even) to the output dtype: the same bits as the CPU reference. The transient full
// weight of one layer is what the GEMMs read (models/quant/).
#pragma once

#include <cuda_runtime_api.h>

#include "cuda/quant4/packed4.cuh"
#include "runtime/dtype.h"

namespace zt::cuda {

struct Dequantize4Args {
  Packed4Weight weight;
  void* out = nullptr;  // [weight.n] contiguous, of out_dtype
  DType out_dtype = DType::kBF16;
};

void dequantize_4bit(const Dequantize4Args& args, cudaStream_t stream);

}  // namespace zt::cuda
