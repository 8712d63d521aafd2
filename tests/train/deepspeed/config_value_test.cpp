// JSON values converted as DeepSpeed converts them: whole numbers as written, and pydantic's
// lax mode for its config models, worked out from pydantic-core's rules.
#include <gtest/gtest.h>

#include "train/deepspeed/config_value.h"

namespace zt::train {
namespace {

using nlohmann::json;

TEST(ConfigValue, WholeNumbersMayBeWrittenAsFloats) {
  EXPECT_EQ(whole_number(json::parse("5e8")), 500'000'000);
  EXPECT_EQ(whole_number(json::parse("-3")), -3);
  EXPECT_EQ(whole_number(json::parse("9223372036854775807")), 9223372036854775807);
  EXPECT_EQ(whole_number(json::parse("9223372036854775808")), std::nullopt);  // one past int64
  EXPECT_EQ(whole_number(json::parse("9.3e18")), std::nullopt);
  EXPECT_EQ(whole_number(json::parse("1.5")), std::nullopt);
  EXPECT_EQ(whole_number(json("5")), std::nullopt);
  EXPECT_EQ(whole_number(json(true)), std::nullopt);
}

TEST(ConfigValue, LaxIntegersAreIntegerStringsButNeverExponents) {
  EXPECT_EQ(lax_int(json("500000000")), 500'000'000);
  EXPECT_EQ(lax_int(json("+5")), 5);
  EXPECT_EQ(lax_int(json("-5")), -5);
  EXPECT_EQ(lax_int(json("5.000")), 5);
  EXPECT_EQ(lax_int(json("1_000")), 1000);
  EXPECT_EQ(lax_int(json(2.0)), 2);
  for (const char* bad : {"5e8", "5.5", "_1", "1_", "1__0", " 5", "", "+", "0x10", "true"})
    EXPECT_EQ(lax_int(json(bad)), std::nullopt) << bad;
  EXPECT_EQ(lax_int(json(true)), std::nullopt);
}

TEST(ConfigValue, LaxFloatsAndBooleans) {
  EXPECT_EQ(lax_float(json("5e8")), 5e8);
  EXPECT_EQ(lax_float(json("+0.5")), 0.5);
  EXPECT_EQ(lax_float(json("1_0.5")), 10.5);
  EXPECT_EQ(lax_float(json(3)), 3.0);
  EXPECT_TRUE(std::isinf(*lax_float(json("inf"))));
  EXPECT_EQ(lax_float(json("five")), std::nullopt);
  EXPECT_EQ(lax_float(json(false)), std::nullopt);
  for (const char* yes : {"true", "True", "YES", "on", "t", "y", "1"}) EXPECT_EQ(lax_bool(json(yes)), true) << yes;
  for (const char* no : {"false", "Off", "no", "f", "n", "0"}) EXPECT_EQ(lax_bool(json(no)), false) << no;
  EXPECT_EQ(lax_bool(json(1)), true);
  EXPECT_EQ(lax_bool(json(0)), false);
  EXPECT_EQ(lax_bool(json(2)), std::nullopt);
  EXPECT_EQ(lax_bool(json("maybe")), std::nullopt);
}

}  // namespace
}  // namespace zt::train
