#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "runtime/dtype.h"
#include "runtime/error.h"

namespace zt {
namespace {

TEST(DType, SizesAndNames) {
  EXPECT_EQ(dtype_size(DType::kBF16), 2u);
  EXPECT_EQ(dtype_size(DType::kF64), 8u);
  EXPECT_EQ(dtype_size(DType::kBool), 1u);
  EXPECT_STREQ(dtype_name(DType::kBF16), "bfloat16");
  for (DType d : kAllDTypes) EXPECT_EQ(parse_dtype(dtype_name(d)), d);
  EXPECT_EQ(parse_dtype("bf16"), DType::kBF16);
  EXPECT_EQ(parse_dtype("fp16"), DType::kF16);
  EXPECT_TRUE(is_floating(DType::kF16));
  EXPECT_FALSE(is_floating(DType::kI64));
}

TEST(DType, ParseRejectsUnknownAndListsAccepted) {
  try {
    parse_dtype("float8");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("float8"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("bfloat16"), std::string::npos);
  }
}

TEST(Half, EveryBitPatternRoundTrips) {
  for (std::uint32_t bits = 0; bits < 65536; ++bits) {
    float value = half_bits_to_float(static_cast<std::uint16_t>(bits));
    if (std::isnan(value)) {
      EXPECT_TRUE(std::isnan(half_bits_to_float(float_to_half_bits(value))));
      continue;
    }
    ASSERT_EQ(float_to_half_bits(value), bits) << "half bits " << bits;
  }
}

TEST(Half, RoundsToNearestEvenAndSaturatesToInfinity) {
  EXPECT_EQ(half_bits_to_float(float_to_half_bits(1.0f + 1.0f / 2048)), 1.0f);                // tie to even (down)
  EXPECT_EQ(half_bits_to_float(float_to_half_bits(1.0f + 3.0f / 2048)), 1.0f + 4.0f / 2048);  // tie up to even
  EXPECT_EQ(half_bits_to_float(float_to_half_bits(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(half_bits_to_float(float_to_half_bits(65520.0f))));
  EXPECT_EQ(half_bits_to_float(float_to_half_bits(65519.0f)), 65504.0f);
  EXPECT_EQ(half_bits_to_float(float_to_half_bits(std::ldexp(1.0f, -24))),
            std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(half_bits_to_float(float_to_half_bits(std::ldexp(1.0f, -26))), 0.0f);
  EXPECT_EQ(float_to_half_bits(-0.0f), 0x8000);
}

TEST(BFloat16, EveryBitPatternRoundTripsAndTiesGoToEven) {
  for (std::uint32_t bits = 0; bits < 65536; ++bits) {
    float value = bf16_bits_to_float(static_cast<std::uint16_t>(bits));
    if (std::isnan(value)) continue;
    ASSERT_EQ(float_to_bf16_bits(value), bits);
  }
  float one_and_half_ulp = std::bit_cast<float>(0x3F808000u);  // exactly between 0x3F80 and 0x3F81
  EXPECT_EQ(float_to_bf16_bits(one_and_half_ulp), 0x3F80);
  float three_halves_ulp = std::bit_cast<float>(0x3F818000u);  // between 0x3F81 and 0x3F82
  EXPECT_EQ(float_to_bf16_bits(three_halves_ulp), 0x3F82);
  EXPECT_TRUE(std::isnan(bf16_bits_to_float(float_to_bf16_bits(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isnan(bf16_bits_to_float(float_to_bf16_bits(std::bit_cast<float>(0x7F800001u)))));
}

}  // namespace
}  // namespace zt
