// A bitsandbytes 4-bit tensor on the device (ops/quant4/blockwise.h's layout) as raw pointers:
// what the dequantize kernel, the 4-bit GEMV and the 4-bit GEMM read. Host code fills it (models/quant/).
#pragma once

#include <cstdint>

namespace zt::cuda {

struct Packed4Weight {
  const std::uint8_t* packed = nullptr;  // [(n + 1) / 2], first code in the high nibble
  bool nf4 = true;                       // else FP4
  std::int64_t n = 0;                    // values (a [N, K] weight flattened row-major: N * K)
  std::int64_t blocksize = 64;
  const float* absmax = nullptr;               // [blocks]; null under double quantization
  const std::uint8_t* absmax_codes = nullptr;  // [blocks] (double quantization)
  const float* nested_absmax = nullptr;        // [ceil(blocks / nested_blocksize)]
  const float* nested_map = nullptr;           // [256]
  float nested_offset = 0.0f;
  std::int64_t nested_blocksize = 256;

  bool has_scales() const {
    return absmax != nullptr || (absmax_codes && nested_absmax && nested_map && nested_blocksize > 0);
  }
};

}  // namespace zt::cuda
