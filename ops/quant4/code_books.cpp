#include "ops/quant4/code_books.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/quant4/code_book_values.h"
#include "runtime/error.h"

namespace zt::ops::quant4 {
namespace {

// torch.linspace(start, end, steps, dtype=float32) as its CPU kernel computes each element:
// the first half counted up from start, the second half down from end, in float. That kernel is
// compiled for AVX2/AVX-512 with the compiler's default contraction, so `start + step * i` is one
// fused multiply-add rounded once; plain float arithmetic differs in 42 of the map's 256 entries.
std::vector<float> linspace_f32(float start, float end, int steps) {
  const float step = (end - start) / static_cast<float>(steps - 1);
  const int halfway = steps / 2;
  std::vector<float> values(static_cast<std::size_t>(steps));
  for (int i = 0; i < steps; ++i)
    values[static_cast<std::size_t>(i)] = i < halfway ? std::fma(step, static_cast<float>(i), start)
                                                      : std::fma(-step, static_cast<float>(steps - i - 1), end);
  return values;
}

std::array<float, 256> make_dynamic_map() {
  constexpr int kExponentBits = 7, kNonSignBits = 7;
  std::vector<float> data;
  for (int i = 0; i < kExponentBits; ++i) {
    const std::vector<float> bounds = linspace_f32(0.1f, 1.0f, (1 << (i + kNonSignBits - kExponentBits)) + 1);
    // The Python scalar 10**e meets a float32 tensor: torch multiplies in float32.
    const auto scale = static_cast<float>(std::pow(10.0, -(kExponentBits - 1) + i));
    for (std::size_t k = 0; k + 1 < bounds.size(); ++k) data.push_back(scale * ((bounds[k] + bounds[k + 1]) / 2.0f));
    for (std::size_t k = 0; k + 1 < bounds.size(); ++k) data.push_back(-scale * ((bounds[k] + bounds[k + 1]) / 2.0f));
  }
  data.push_back(0.0f);
  data.push_back(1.0f);
  ZT_REQUIRE(data.size() == 256, "the dynamic map has 256 entries");
  std::sort(data.begin(), data.end());
  std::array<float, 256> map{};
  std::copy(data.begin(), data.end(), map.begin());
  return map;
}

}  // namespace

const char* quant4_type_name(Quant4Type type) { return type == Quant4Type::kNf4 ? "nf4" : "fp4"; }

Quant4Type parse_quant4_type(const std::string& name, const std::string& where) {
  if (name == "nf4") return Quant4Type::kNf4;
  if (name == "fp4") return Quant4Type::kFp4;
  fail(where + ": '" + name + "' is not a 4-bit quantization type; bitsandbytes has 'nf4' and 'fp4'");
}

const std::array<float, 16>& code_book(Quant4Type type) {
  static const std::array<float, 16> nf4 = std::to_array(kNf4Values.values);
  static const std::array<float, 16> fp4 = std::to_array(kFp4Values.values);
  return type == Quant4Type::kNf4 ? nf4 : fp4;
}

// The thresholds are bitsandbytes' own float literals (midpoints of neighbouring codes); they
// are kept as written there, since a recomputed midpoint may differ in its last bit.
std::uint8_t nearest_nf4(float x) {
  if (x > 0.03979014977812767f) {
    if (x > 0.3893125355243683f) {
      if (x > 0.6427869200706482f) return x > 0.8614784181118011f ? 0b1111 : 0b1110;
      return x > 0.5016634166240692f ? 0b1101 : 0b1100;
    }
    if (x > 0.2035212516784668f) return x > 0.2920137718319893f ? 0b1011 : 0b1010;
    return x > 0.1202552504837513f ? 0b1001 : 0b1000;
  }
  if (x > -0.33967943489551544f) {
    if (x > -0.13791173323988914f) return x > -0.045525018125772476f ? 0b0111 : 0b0110;
    return x > -0.23460740596055984f ? 0b0101 : 0b0100;
  }
  if (x > -0.6106329262256622f) return x > -0.4599952697753906f ? 0b0011 : 0b0010;
  return x > -0.8480964004993439f ? 0b0001 : 0b0000;
}

std::uint8_t nearest_fp4(float x) {
  const std::uint8_t sign = x < 0 ? 0b1000 : 0;
  x = std::fabs(x);
  std::uint8_t code = 0;
  if (x > 0.29166667f) {
    if (x > 0.583333f)
      code = x > 0.8333333f ? 0b0011 : 0b0010;
    else
      code = x > 0.4166667f ? 0b0101 : 0b0100;
  } else if (x > 0.0859375f) {
    code = x > 0.20833333f ? 0b0111 : 0b0110;
  } else {
    code = x > 0.00260417f ? 0b0001 : 0b0000;
  }
  return static_cast<std::uint8_t>(code + sign);
}

const std::array<float, 256>& dynamic_map() {
  static const std::array<float, 256> map = make_dynamic_map();
  return map;
}

std::uint8_t nearest_in_map(const std::array<float, 256>& map, float x) {
  int pivot = 127, upper_pivot = 255, lower_pivot = 0;
  float lower = -1.0f, upper = 1.0f;
  float value = map[pivot];
  for (int half = 64; half > 0; half >>= 1) {
    if (x > value) {
      lower_pivot = pivot;
      lower = value;
      pivot += half;
    } else {
      upper_pivot = pivot;
      upper = value;
      pivot -= half;
    }
    value = map[static_cast<std::size_t>(pivot)];
  }
  if (upper_pivot == 255) upper = map[255];
  if (lower_pivot == 0) lower = map[0];
  if (x > value) return static_cast<std::uint8_t>(x > (upper + value) * 0.5f ? upper_pivot : pivot);
  return static_cast<std::uint8_t>(x < (lower + value) * 0.5f ? lower_pivot : pivot);
}

}  // namespace zt::ops::quant4
