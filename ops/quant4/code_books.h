// The code books of bitsandbytes' blockwise quantization: the 16 values a 4-bit code stands for
// (NF4, FP4), as its CUDA kernels' lookup tables hold them, and the signed 8-bit dynamic map
// (create_dynamic_map) its double quantization stores the absmax of 4-bit blocks in.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace zt::ops::quant4 {

enum class Quant4Type { kNf4, kFp4 };

const char* quant4_type_name(Quant4Type type);  // "nf4", "fp4" as bitsandbytes spells them
// "nf4" or "fp4"; anything else throws zt::Error naming `where` and the two names.
Quant4Type parse_quant4_type(const std::string& name, const std::string& where);

// Code -> value in [-1, 1] (NF4: quantiles of N(0, 1); FP4: 1 sign, 2 exponent, 1 mantissa bit,
// normalised by 12), bitsandbytes' get_4bit_type in float32.
const std::array<float, 16>& code_book(Quant4Type type);

// The value nearest a scaled weight x (x in [-1, 1]) by bitsandbytes' decision trees
// (dQuantizeNF4, dQuantizeFP4): thresholds halfway between neighbouring codes, ties to the lower
// code; a NaN (a block of zeros scaled by 1/0) falls through every test, as there.
std::uint8_t nearest_nf4(float x);
std::uint8_t nearest_fp4(float x);

// create_dynamic_map(signed=True, max_exponent_bits=7, total_bits=8): 256 values sorted
// ascending, from -1 to 1, dense near zero.
const std::array<float, 256>& dynamic_map();

// dQuantize<0>: the code of x in a sorted 256-entry map by the kernel's 7-step binary search,
// then the nearer of the two codes around x (its midpoint rule).
std::uint8_t nearest_in_map(const std::array<float, 256>& map, float x);

}  // namespace zt::ops::quant4
