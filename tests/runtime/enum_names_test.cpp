#include "runtime/enum_names.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/dtype.h"
#include "runtime/log.h"

namespace zt {
namespace {

enum class Color { kRed, kGreen, kBlue };

constexpr EnumName<Color> kColors[] = {{Color::kRed, "red"}, {Color::kGreen, "green"}};
constexpr EnumName<Color> kColorAliases[] = {{Color::kRed, "crimson"}};
constexpr const auto& enum_names(Color) { return kColors; }

TEST(EnumNames, NameOfGivesTheTablesNameOrTheFallback) {
  EXPECT_STREQ(name_of(kColors, Color::kGreen), "green");
  EXPECT_STREQ(name_of(kColors, Color::kBlue), "unknown");
  EXPECT_STREQ(name_of(kColors, Color::kBlue, "?"), "?");
  static_assert(name_of(kColors, Color::kRed)[0] == 'r', "usable in constant expressions");
}

TEST(EnumNames, FindValueMatchesWholeNamesOnly) {
  EXPECT_EQ(find_value(kColors, "red"), Color::kRed);
  EXPECT_FALSE(find_value(kColors, "re").has_value());
  EXPECT_FALSE(find_value(kColors, "Red").has_value());
  EXPECT_FALSE(find_value(kColors, "").has_value());
}

TEST(EnumNames, NamesOfJoinsInTableOrder) {
  EXPECT_EQ(names_of(kColors), "red, green");
  EXPECT_EQ(names_of(kColors, " | "), "red | green");
}

TEST(EnumNames, ParseNameErrorSaysWhatWasGivenAndListsTheAcceptedNames) {
  EXPECT_EQ(parse_name(kColors, "green", "color"), Color::kGreen);
  try {
    parse_name(kColors, "blue", "color");
    FAIL() << "no error for a name outside the table";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "unknown color 'blue'; use one of red, green");
  }
}

TEST(EnumNames, AliasesParseButAreNotListed) {
  EXPECT_EQ(parse_name(kColors, kColorAliases, "crimson", "color"), Color::kRed);
  EXPECT_EQ(parse_name(kColors, kColorAliases, "green", "color"), Color::kGreen);
  try {
    parse_name(kColors, kColorAliases, "teal", "color");
    FAIL() << "no error for a name outside both tables";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "unknown color 'teal'; use one of red, green");
  }
}

// Code generic over enums finds the table through the enum's type.
TEST(EnumNames, TheTypeKeyedFormsReadTheTableFoundBesideTheEnum) {
  EXPECT_STREQ(name_of(Color::kGreen), "green");
  EXPECT_STREQ(name_of(Color::kBlue), "");
  EXPECT_EQ(enum_from_name<Color>("red"), Color::kRed);
  EXPECT_FALSE(enum_from_name<Color>("blue").has_value());
  EXPECT_EQ(enum_name_list<Color>(), (std::vector<std::string>{"red", "green"}));
}

// The converted tables keep the names and messages they had.
TEST(EnumNames, DTypeAndLogLevelNamesRoundTrip) {
  for (DType dtype : kAllDTypes) EXPECT_EQ(parse_dtype(dtype_name(dtype)), dtype) << dtype_name(dtype);
  EXPECT_EQ(parse_dtype("bf16"), DType::kBF16);
  EXPECT_EQ(log::parse_level("warning"), log::Level::kWarn);
  try {
    parse_dtype("float8");
    FAIL() << "float8 parsed";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "unknown dtype 'float8'; use one of float32, float64, float16, bfloat16, int32, int64, uint8, bool");
  }
}

}  // namespace
}  // namespace zt
