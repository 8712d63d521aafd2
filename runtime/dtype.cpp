#include "runtime/dtype.h"

#include <bit>
#include <cmath>

#include "runtime/error.h"

namespace zt {

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

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "float32";
    case DType::kF64:
      return "float64";
    case DType::kF16:
      return "float16";
    case DType::kBF16:
      return "bfloat16";
    case DType::kI32:
      return "int32";
    case DType::kI64:
      return "int64";
    case DType::kU8:
      return "uint8";
    case DType::kBool:
      return "bool";
  }
  return "unknown";
}

bool is_floating(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF64 || dtype == DType::kF16 || dtype == DType::kBF16;
}

DType parse_dtype(const std::string& text) {
  if (text == "float32" || text == "fp32" || text == "f32" || text == "float") return DType::kF32;
  if (text == "float64" || text == "fp64" || text == "f64" || text == "double") return DType::kF64;
  if (text == "float16" || text == "fp16" || text == "f16" || text == "half") return DType::kF16;
  if (text == "bfloat16" || text == "bf16") return DType::kBF16;
  if (text == "int32" || text == "i32") return DType::kI32;
  if (text == "int64" || text == "i64") return DType::kI64;
  if (text == "uint8" || text == "u8") return DType::kU8;
  if (text == "bool") return DType::kBool;
  throw Error("unknown dtype '" + text +
              "'; use one of float32, float64, float16, bfloat16, int32, int64, uint8, bool");
}

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
