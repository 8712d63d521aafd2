// User JSON's errors say the file, line and column, never nlohmann's "[json.exception...]".
#include "runtime/json_text.h"

#include <gtest/gtest.h>

#include "tests/common/op_test_util.h"

namespace zt {
namespace {

using testing::error_of;

std::string parse_error(const std::string& text, std::size_t line_in_file = 0) {
  return error_of([&] { parse_json(text, "data.json", nullptr, line_in_file); });
}

TEST(JsonText, ASyntaxErrorNamesTheFileLineAndColumn) {
  // The third line's object lacks a comma before "output": nlohmann stops at the end of the
  // string it did not expect, the 30th character of that line.
  const std::string text =
      "[\n  {\"instruction\": \"a\", \"output\": \"b\"},\n  {\"instruction\": \"c\" \"output\": \"d\"}\n]";
  const std::string message = parse_error(text);
  EXPECT_EQ(message.rfind("data.json:3:30: not valid JSON: syntax error while parsing object", 0), 0u) << message;
  EXPECT_EQ(message.find("json.exception"), std::string::npos) << message;
  EXPECT_EQ(message.find("parse error at"), std::string::npos) << message;
}

TEST(JsonText, TheEndOfTheTextIsWhereATruncatedFileStops) {
  EXPECT_EQ(parse_error("{\"a\": [1,\n 2,").rfind("data.json:2:4: not valid JSON: ", 0), 0u)
      << parse_error("{\"a\": [1,\n 2,");
}

TEST(JsonText, ColumnsCountCharactersNotBytes) {
  // "é" is two bytes; the stray '}' is the 9th character of its line (the 10th byte).
  const std::string message = parse_error("{\"é\": 1}}");
  EXPECT_EQ(message.rfind("data.json:1:9: ", 0), 0u) << message;
}

TEST(JsonText, ALineOfJsonLinesCountsFromItsLineInTheFile) {
  EXPECT_EQ(parse_error("{\"a\": tru}", 7).rfind("data.json:7:10: not valid JSON: ", 0), 0u)
      << parse_error("{\"a\": tru}", 7);
}

TEST(JsonText, AnErrorWithoutAPositionStillNamesTheFileAndLine) {
  std::string message = parse_error("{\"a\": 1e400}");
  EXPECT_EQ(message, "data.json: not valid JSON: number overflow parsing '1e400'");
  message = parse_error("{\"a\": 1e400}", 4);
  EXPECT_EQ(message, "data.json:4: not valid JSON: number overflow parsing '1e400'");
}

TEST(JsonText, ValidTextParsesInEitherJsonType) {
  EXPECT_EQ(parse_json("{\"b\": 1, \"a\": [true]}", "x.json")["a"][0], true);
  EXPECT_EQ(parse_json<nlohmann::ordered_json>("{\"b\": 1, \"a\": 2}", "x.json").begin().key(), "b");
}

TEST(JsonText, ACallbackErrorPassesThrough) {
  const auto refuse_arrays = [](int, nlohmann::json::parse_event_t event, nlohmann::json&) {
    if (event == nlohmann::json::parse_event_t::array_start) fail("no arrays here");
    return true;
  };
  EXPECT_EQ(error_of([&] { parse_json("{\"a\": [1]}", "x.json", refuse_arrays); }), "no arrays here");
}

// json.dumps's NaN, Infinity and -Infinity become null; the same words inside strings stay.
TEST(JsonText, PythonConstantsOutsideStringsBecomeNull) {
  EXPECT_EQ(python_constants_as_null(R"({"a": NaN, "b": [Infinity, -Infinity], "c": "NaN \" Infinity"})"),
            R"({"a": null, "b": [null, null], "c": "NaN \" Infinity"})");
  EXPECT_EQ(python_constants_as_null("[NaNa, -1, 1e5]"), "[NaNa, -1, 1e5]");
}

}  // namespace
}  // namespace zt
