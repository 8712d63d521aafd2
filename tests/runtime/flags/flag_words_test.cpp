// The grammar every command's flags are read by (runtime/flags/): how words become flags and
// values (lists, booleans and their words, `name=value` where a table takes it, operands,
// unknown flags and missing values reported and read past), values checked by kind, problems
// reported together, and --help from the table (hidden groups, further usage lines).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/error.h"
#include "runtime/flags/flag_help.h"
#include "runtime/flags/flag_table.h"
#include "runtime/flags/flag_words.h"
#include "runtime/usage_error.h"

namespace zt {
namespace {

FlagTable table(bool name_value_words) {
  return {.command = "demo",
          .description = "A demonstration.\n",
          .groups = {{"Demo",
                      {{.name = "--steps", .kind = FlagKind::kInteger, .help = "how many", .aliases = {"--max_steps"}},
                       {.name = "--bf16", .kind = FlagKind::kBool, .help = "half"},
                       {.name = "--target", .kind = FlagKind::kList, .help = "modules"},
                       {.name = "--out", .help = "where"}}},
                     {.title = "Accepted quietly",
                      .flags = {{.name = "--push_to_hub", .kind = FlagKind::kBool}},
                      .hidden = true}},
          .usages = {"args.yaml [--name value ...]"},
          .name_value_words = name_value_words};
}

struct Read {
  std::vector<GivenFlag> given;
  std::vector<std::string> problems;
};

Read read(const std::vector<std::string>& args, bool name_value_words = false) {
  static const FlagTable with = table(true), without = table(false);
  Read result;
  result.given = read_flag_words(args, name_value_words ? with : without, result.problems);
  return result;
}

TEST(FlagWords, ReadsValuesListsAndBooleansInOrder) {
  const Read r =
      read({"--max_steps=3", "--bf16", "--target", "q_proj", "v_proj", "--out", "-1", "--push_to_hub", "no"});
  ASSERT_TRUE(r.problems.empty()) << r.problems[0];
  ASSERT_EQ(r.given.size(), 5u);
  EXPECT_EQ(r.given[0].name, "--max_steps");
  EXPECT_EQ(r.given[0].flag->name, "--steps");
  EXPECT_EQ(r.given[0].value, "3");
  EXPECT_EQ(r.given[1].value, "true");
  EXPECT_EQ(r.given[2].value, "q_proj,v_proj");
  EXPECT_EQ(r.given[2].words, (std::vector<std::string>{"q_proj", "v_proj"}));
  EXPECT_EQ(r.given[3].value, "-1");  // a value may start with one dash
  EXPECT_EQ(r.given[4].flag->name, "--push_to_hub");
  EXPECT_EQ(r.given[4].value, "no");  // a boolean takes HF's words after it
}

TEST(FlagWords, WordsThatAreNoFlagAreOperandsUnlessTheTableTakesNameValue) {
  Read r = read({"--bf16", "maybe", "steps=4"});
  ASSERT_EQ(r.given.size(), 3u);
  EXPECT_EQ(r.given[0].value, "true");
  EXPECT_EQ(r.given[1].flag, nullptr);
  EXPECT_EQ(r.given[1].name, "maybe");
  EXPECT_EQ(r.given[2].flag, nullptr);
  r = read({"steps=4", "--target", "a", "b", "out=x"}, true);
  ASSERT_TRUE(r.problems.empty());
  ASSERT_EQ(r.given.size(), 3u);
  EXPECT_EQ(r.given[0].flag->name, "--steps");
  EXPECT_EQ(r.given[0].value, "4");
  EXPECT_EQ(r.given[1].value, "a,b");  // a list stops at the next name=value word
  EXPECT_EQ(r.given[2].value, "x");
}

TEST(FlagWords, UnknownFlagsAndMissingValuesAreReportedAndReadPast) {
  const Read r = read({"--stpes", "3", "--out", "--target", "--bf16"});
  ASSERT_EQ(r.problems.size(), 3u);
  EXPECT_EQ(r.problems[0], "unknown option '--stpes' (did you mean --steps?); see `zerotune demo --help`");
  EXPECT_EQ(r.problems[1], "option --out needs a value");
  EXPECT_EQ(r.problems[2], "option --target needs a value");
  ASSERT_EQ(r.given.size(), 1u);  // the unknown flag's value went with it
  EXPECT_EQ(r.given[0].flag->name, "--bf16");
}

TEST(FlagWords, ValuesAreCheckedByKind) {
  const FlagTable demo = table(false);
  EXPECT_NO_THROW(check_flag_value(*demo.find("--bf16"), "False"));
  EXPECT_THROW(check_flag_value(*demo.find("--bf16"), "maybe"), UsageError);
  EXPECT_NO_THROW(check_flag_value(*demo.find("--steps"), "2.0"));
  EXPECT_THROW(check_flag_value(*demo.find("--steps"), "2.5"), UsageError);
  EXPECT_EQ(integer_flag("--seed", "9007199254740993"), 9007199254740993);  // exact past a double's bits
  const Flag checked{.name = "--device", .check = [](const std::string& value) {
                       if (value != "cpu") fail("unknown device '" + value + "'");
                     }};
  try {
    check_flag_value(checked, "gpu");
    FAIL() << "accepted";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--device: unknown device 'gpu'");
  }
}

TEST(FlagWords, ProblemsAreReportedTogether) {
  try {
    fail_with_flag_problems({"first", "second"});
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "the arguments have 2 problems:\n  first\n  second");
  }
  EXPECT_THROW(fail_with_flag_problems({"one"}), UsageError);
}

TEST(FlagHelp, ShowsUsagesAndShownGroupsOnly) {
  const std::string help = flags_help(table(false));
  EXPECT_EQ(help.rfind("usage: zerotune demo [options]\n       zerotune demo args.yaml [--name value ...]\n\n"
                       "A demonstration.\n\nDemo:\n",
                       0),
            0u)
      << help;
  EXPECT_NE(help.find("how many (also --max_steps)"), std::string::npos) << help;
  EXPECT_EQ(help.find("push_to_hub"), std::string::npos) << help;
  EXPECT_EQ(help.find("Accepted quietly"), std::string::npos) << help;
}

}  // namespace
}  // namespace zt
