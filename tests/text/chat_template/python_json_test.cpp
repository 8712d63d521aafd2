// JSON and Python values written byte for byte as Python writes them (json.dumps with
// ensure_ascii=False, repr()), the way the model families' templates print tools and calls.
// Expected strings are what CPython 3 prints for the same values.
#include <gtest/gtest.h>

#include "tests/common/op_test_util.h"
#include "text/chat_template/python_json.h"

namespace zt::models {
namespace {

using json = nlohmann::ordered_json;

std::string dumps(std::string_view text, int indent = -1) { return python_json_dumps(json::parse(text), indent); }
std::string repr(std::string_view text) { return python_repr(json::parse(text)); }

TEST(PythonJson, DumpsKeepsKeyOrderAndPythonsSeparators) {
  EXPECT_EQ(dumps(R"({"b":1,"a":[true,false,null],"c":{}})"), R"({"b": 1, "a": [true, false, null], "c": {}})");
  EXPECT_EQ(dumps(R"({"a":[1,{"b":[]}]})", 4),
            "{\n    \"a\": [\n        1,\n        {\n            \"b\": []\n        }\n    ]\n}");
  EXPECT_EQ(dumps("[]", 4), "[]");
}

TEST(PythonJson, DumpsStringsUnescapedExceptControlCharacters) {
  EXPECT_EQ(dumps(R"("北京 \"q\" \\ \n\t\r\b\f \u0001 \u007f é 😀")"),
            "\"北京 \\\"q\\\" \\\\ \\n\\t\\r\\b\\f \\u0001 \x7f é 😀\"");
}

TEST(PythonJson, FloatsAsPythonsRepr) {
  EXPECT_EQ(dumps("[1.0, 0.5, 1e-05, 0.0001, 1e16, 1.5e16, 123456789012345.0, 2.5e-7, -0.0, 100, 1e+300]"),
            "[1.0, 0.5, 1e-05, 0.0001, 1e+16, 1.5e+16, 123456789012345.0, 2.5e-07, -0.0, 100, 1e+300]");
  EXPECT_EQ(dumps("[0.1, 3.14159, 1234567890123456.0, 12345678901234567.0]"),
            "[0.1, 3.14159, 1234567890123456.0, 1.2345678901234568e+16]");
}

TEST(PythonJson, ReprAsPython) {
  EXPECT_EQ(repr(R"({"s": "it's", "t": "say \"hi\"", "u": "both ' and \"", "n": null, "b": [true, 1.5, 2]})"),
            R"({'s': "it's", 't': 'say "hi"', 'u': 'both \' and "', 'n': None, 'b': [True, 1.5, 2]})");
  EXPECT_EQ(repr(R"("tab\tnew\nline\\ \u0007 \u00a0 \u200b 北京")"), "'tab\\tnew\\nline\\\\ \\x07 \\xa0 \\u200b 北京'");
}

TEST(PythonJson, ParseNamesWhatIsNotJson) {
  EXPECT_EQ(parse_ordered_json(R"({"z": 1, "a": 2})", "x").begin().key(), "z");
  EXPECT_NE(testing::error_of([] {
              parse_ordered_json("{oops", "the arguments of f");
            }).find("the arguments of f is not valid JSON: {oops"),
            std::string::npos);
}

}  // namespace
}  // namespace zt::models
