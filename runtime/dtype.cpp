#include "runtime/dtype.h"

#include <bit>
#include <cmath>

#include "runtime/enum_names.h"
#include "runtime/error.h"

namespace zt {
namespace {

// As torch prints them; parse_dtype also takes the usual short forms.
constexpr EnumName<DType> kDTypeNames[] = {
    {DType::kF32, "float32"}, {DType::kF64, "float64"}, {DType::kF16, "float16"}, {DType::kBF16, "bfloat16"},
    {DType::kI32, "int32"},   {DType::kI64, "int64"},   {DType::kU8, "uint8"},    {DType::kBool, "bool"}};
constexpr EnumName<DType> kDTypeAliases[] = {{DType::kF32, "fp32"},  {DType::kF32, "f32"}, {DType::kF32, "float"},
                                             {DType::kF64, "fp64"},  {DType::kF64, "f64"}, {DType::kF64, "double"},
                                             {DType::kF16, "fp16"},  {DType::kF16, "f16"}, {DType::kF16, "half"},
                                             {DType::kBF16, "bf16"}, {DType::kI32, "i32"}, {DType::kI64, "i64"},
                                             {DType::kU8, "u8"}};

}  // namespace

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kF64:
    case DType::kI64:
      return 8;
    case DType::kF32:
    case DType::kI32:
      return 4;
    case DType::kF16:
    case DType::kBF16:
      return 2;
    case DType::kU8:
    case DType::kBool:
      return 1;
  }
  return 0;
}

const char* dtype_name(DType dtype) { return name_of(kDTypeNames, dtype); }

bool is_floating(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF64 || dtype == DType::kF16 || dtype == DType::kBF16;
}

DType parse_dtype(const std::string& text) { return parse_name(kDTypeNames, kDTypeAliases, text, "dtype"); }

float bf16_bits_to_float(std::uint16_t bits) { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }

std::uint16_t float_to_bf16_bits(float value) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(value);
  if (std::isnan(value)) return static_cast<std::uint16_t>((u >> 16) | 0x40);  // keep it quiet NaN
  std::uint32_t rounding = 0x7FFF + ((u >> 16) & 1);
  return static_cast<std::uint16_t>((u + rounding) >> 16);
}

float half_bits_to_float(std::uint16_t bits) {
  std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000) << 16;
  std::uint32_t exponent = (bits >> 10) & 0x1F;
  std::uint32_t mantissa = bits & 0x3FF;
  if (exponent == 0x1F) return std::bit_cast<float>(sign | 0x7F800000 | (mantissa << 13));
  if (exponent == 0) {
    float magnitude = std::ldexp(static_cast<float>(mantissa), -24);  // subnormal or zero
    return sign ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

std::uint16_t float_to_half_bits(float value) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(value);
  std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000);
  std::uint32_t magnitude = u & 0x7FFFFFFF;
  if (magnitude > 0x7F800000) return sign | 0x7E00;   // NaN
  if (magnitude >= 0x477FF000) return sign | 0x7C00;  // rounds past 65504: inf
  if (magnitude < 0x38800000) {                       // below 2^-14: subnormal
    // Scale into the subnormal grid (units of 2^-24) and round to nearest even there.
    float scaled = std::bit_cast<float>(magnitude) * 16777216.0f;
    return sign | static_cast<std::uint16_t>(std::nearbyint(scaled));
  }
  std::uint32_t rounding = 0xFFF + ((magnitude >> 13) & 1);
  return sign | static_cast<std::uint16_t>((magnitude - 0x38000000 + rounding) >> 13);
}

}  // namespace zt
