// bitsandbytes' blockwise quantization on the CPU, bit for bit as its CUDA kernels compute it
// (kQuantizeBlockwise, kDequantizeBlockwise): the reference the GPU kernel (cuda/quant4/) and
// the checkpoint loader (models/quant/) are tested against.
//
// 4-bit (quantize_4bit): the values, flattened, are cut into blocks of `blocksize`; each block's
// absmax (fp32) is stored, every value is scaled by the reciprocal 1/absmax (in float) and
// replaced by the code nearest it (code_books.h); two codes share a byte, the first in the high
// nibble. An odd count leaves the last low nibble holding the code of a zero. A block of zeros
// has absmax 0 and 0 * (1/0) = NaN for every value: each gets code 0, which dequantizes to
// -1 * 0 = -0, as on the GPU.
//
// Double quantization (compress_statistics=True): the absmax of the 4-bit blocks, less their
// mean (the offset), quantized again in blocks of 256 with the signed 8-bit dynamic map.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ops/quant4/code_books.h"

namespace zt::ops::quant4 {

inline constexpr std::int64_t kDefaultBlocksize = 64;
inline constexpr std::int64_t kNestedBlocksize = 256;

// bitsandbytes' blocksizes for 4-bit quantization: 32, 64, ..., 4096.
bool valid_4bit_blocksize(std::int64_t blocksize);
std::int64_t block_count(std::int64_t values, std::int64_t blocksize);  // ceil(values / blocksize)

struct Packed4 {
  std::vector<std::uint8_t> packed;  // (n + 1) / 2 bytes
  std::vector<float> absmax;         // one per block
};

// Throws zt::Error naming `name` (the tensor) and the first position of a NaN or infinity: its
// block's scale would be NaN and every weight of the block lost.
void require_finite(std::span<const float> values, const std::string& name);

Packed4 quantize_4bit(std::span<const float> values, std::int64_t blocksize, Quant4Type type, const std::string& name);

// out[i] = code_book[code of i] * absmax[i / blocksize], in float (the caller rounds to its dtype).
void dequantize_4bit(std::span<const std::uint8_t> packed, std::span<const float> absmax, std::int64_t blocksize,
                     Quant4Type type, std::span<float> out);

// quantize_blockwise with a 256-entry map: the codes and each block's absmax.
struct Blockwise8 {
  std::vector<std::uint8_t> codes;
  std::vector<float> absmax;
};
Blockwise8 quantize_blockwise_8bit(std::span<const float> values, std::int64_t blocksize,
                                   const std::array<float, 256>& map);
// out[i] = map[codes[i]] * absmax[i / blocksize].
std::vector<float> dequantize_blockwise_8bit(std::span<const std::uint8_t> codes, std::span<const float> absmax,
                                             std::int64_t blocksize, const std::array<float, 256>& map);

// The bytes a 4-bit tensor of n values holds: (n + 1) / 2 of codes and, per block, an fp32 absmax
// or, double-quantized, a uint8 code with an fp32 scale per 256 codes and the 256-entry map.
std::int64_t quantized_bytes(std::int64_t n, std::int64_t blocksize, bool double_quant);

// The absmax of a 4-bit tensor, double-quantized.
struct NestedAbsmax {
  std::vector<std::uint8_t> codes;  // one per 4-bit block ("absmax" in the checkpoint, uint8)
  std::vector<float> absmax;        // one per 256 codes ("nested_absmax")
  float offset = 0.0f;              // the mean subtracted first ("nested_offset")
  std::int64_t blocksize = kNestedBlocksize;
};
// The offset is the mean of the absmax summed in double and rounded once; torch sums in float
// in an order of its own, so the offset may differ from bitsandbytes' in its last bits (every
// code is then computed exactly as there from it).
NestedAbsmax compress_absmax(std::span<const float> absmax);
// map[code] * nested_absmax + offset, in float, as dequantize_blockwise then `absmax += offset`.
std::vector<float> decompress_absmax(std::span<const std::uint8_t> codes, std::span<const float> nested_absmax,
                                     std::int64_t blocksize, float offset, const std::array<float, 256>& map);

}  // namespace zt::ops::quant4
