// A bitsandbytes 4-bit tensor on the device (ops/quant4/blockwise.h's layout) as raw pointers:
// what the dequantize kernel, the 4-bit GEMV and the 4-bit GEMM read. Host code fills it (models/quant/).
#pragma once

#include <cstdint>
#include <string>

#include "runtime/error.h"

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

// What every kernel checks of the weight before reading it: an even, positive blocksize and
// its scales. `kernel` starts each message ("gemv_4bit: ...").
inline void require_packed4_scales(const Packed4Weight& w, const std::string& kernel) {
  ZT_REQUIRE(w.blocksize > 0 && w.blocksize % 2 == 0, kernel + ": the blocksize must be even and positive");
  ZT_REQUIRE(w.has_scales(), kernel + ": give absmax, or the nested absmax with its codes and map");
}

// The same for a [out_features, in_features] matrix, after checking that it holds that many
// values.
inline void require_packed4_matrix(const Packed4Weight& w, std::int64_t in_features, std::int64_t out_features,
                                   const std::string& kernel) {
  ZT_REQUIRE(in_features > 0 && w.n == in_features * out_features,
             kernel + ": the 4-bit weight holds " + std::to_string(w.n) + " values, not " +
                 std::to_string(out_features) + " x " + std::to_string(in_features));
  require_packed4_scales(w, kernel);
}

}  // namespace zt::cuda
