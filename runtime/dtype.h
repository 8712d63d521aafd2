// Element types shared by tensors and kernels (as c10's ScalarType is), and exact host
// conversions for the two 16-bit float formats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace zt {

enum class DType : std::uint8_t { kF32, kF64, kF16, kBF16, kI32, kI64, kU8, kBool };

inline constexpr DType kAllDTypes[] = {DType::kF32, DType::kF64, DType::kF16, DType::kBF16,
                                       DType::kI32, DType::kI64, DType::kU8,  DType::kBool};

std::size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);  // "float32", "bfloat16", ... as torch prints them
bool is_floating(DType dtype);
// Accepts torch names and the usual short forms (float32/fp32/f32, bfloat16/bf16, ...).
DType parse_dtype(const std::string& text);

// 16-bit floats stored as their bits; arithmetic goes through float.
struct BFloat16 {
  std::uint16_t bits;
};
struct Half {
  std::uint16_t bits;
};

float bf16_bits_to_float(std::uint16_t bits);
std::uint16_t float_to_bf16_bits(float value);  // round to nearest even; NaN stays NaN
float half_bits_to_float(std::uint16_t bits);
std::uint16_t float_to_half_bits(float value);  // round to nearest even; overflow to inf

}  // namespace zt
