// Every command's flag table (runtime/flags/flag_table.h; train's is train/args/argument_table.h's),
// read from the registry of commands, against the built binary: its --help lists each flag and
// alias the table shows, an unknown or mistyped flag fails with exit code 2 naming it (and the
// flag meant), and a value of the wrong kind fails naming the flag and what it takes. Also the
// grammar itself, on a table of its own.
#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/flag_table.h"
#include "runtime/usage_error.h"
#include "tests/common/process_test_util.h"

namespace zt::cli {
namespace {

using zt::testing::CliRun;
using zt::testing::run_zerotune;

class CommandFlags : public zt::testing::FolderTest {
 protected:
  // `zerotune <arguments>`, expected to be refused as bad usage (exit code 2).
  std::string refused(const std::string& arguments) {
    const CliRun run = run_zerotune(arguments, dir_);
    EXPECT_EQ(run.exit_code, 2) << "zerotune " << arguments << ":\n" << run.output;
    return run.output;
  }
};

// The flags --help shows (not a hidden group's: train's names accepted without effect).
std::vector<const Flag*> table_flags(const FlagTable& table) {
  std::vector<const Flag*> flags;
  for (const FlagGroup& group : table.groups)
    for (const Flag& flag : group.flags)
      if (!group.hidden) flags.push_back(&flag);
  return flags;
}

// Whether a line of `help` starts the entry of `name` ("  --name", then a space or the end).
bool has_entry(const std::string& help, const std::string& name) {
  std::istringstream lines(help);
  for (std::string line; std::getline(lines, line);) {
    const std::string head = "  " + name;
    if (line.rfind(head, 0) == 0 && (line.size() == head.size() || line[head.size()] == ' ')) return true;
  }
  return false;
}

// Whether `text` names `flag` as a whole word (--tp, not the start of --tp_size).
bool names_flag(const std::string& text, const std::string& flag) {
  for (std::size_t at = text.find(flag); at != std::string::npos; at = text.find(flag, at + 1)) {
    const char next = at + flag.size() < text.size() ? text[at + flag.size()] : ' ';
    if (!std::isalnum(static_cast<unsigned char>(next)) && next != '_') return true;
  }
  return false;
}

TEST_F(CommandFlags, EveryCommandHasATable) {
  std::set<std::string> with_table;
  for (const Command& command : registry())
    if (command.flags) with_table.insert(command.name);
  // train's is built from its arguments' table, which files are read by too.
  const std::set<std::string> expected{"chat",     "env",    "estimate", "evaluate", "export",
                                       "generate", "launch", "serve",    "tokenize", "train"};
  EXPECT_EQ(with_table, expected);
}

TEST_F(CommandFlags, HelpListsEveryFlagAndAlias) {
  for (const Command& command : registry()) {
    if (!command.flags) continue;
    const FlagTable table = command.flags();
    const CliRun help = run_zerotune(command.name + " --help", dir_);
    ASSERT_EQ(help.exit_code, 0) << command.name << ": " << help.output;
    EXPECT_EQ(help.output.rfind("usage: zerotune " + command.name, 0), 0u) << help.output;
    for (const Flag* flag : table_flags(table)) {
      EXPECT_TRUE(has_entry(help.output, flag->name))
          << "zerotune " << command.name << " --help has no entry for " << flag->name << ":\n"
          << help.output;
      for (const std::string& alias : flag->aliases)
        EXPECT_TRUE(names_flag(help.output, alias))
            << "zerotune " << command.name << " --help does not name " << alias << ", which it accepts";
    }
  }
}

TEST_F(CommandFlags, UnknownAndMistypedFlagsAreRefusedByName) {
  for (const Command& command : registry()) {
    if (!command.flags) continue;
    const std::string unknown = refused(command.name + " --no_such_flag 1");
    EXPECT_NE(unknown.find("unknown option '--no_such_flag'"), std::string::npos) << unknown;
    EXPECT_NE(unknown.find("see `zerotune " + command.name + " --help`"), std::string::npos) << unknown;
    // The longest name with one letter dropped: the error names the flag meant.
    const FlagTable table = command.flags();
    std::string longest;
    for (const Flag* flag : table_flags(table))
      if (flag->name.size() > longest.size()) longest = flag->name;
    const std::string typo = longest.substr(0, longest.size() - 2) + longest.back();
    const std::string mistyped = refused(command.name + " " + typo + " 1");
    EXPECT_NE(mistyped.find("(did you mean " + longest + "?)"), std::string::npos) << mistyped;
  }
}

// An arguments file comes first, as train's does (cli/arguments_file.h reads it): one after a flag
// is named as an arguments file in the wrong place, not as an unknown option.
TEST_F(CommandFlags, AnArgumentsFileAfterAFlagIsNamedAsOne) {
  const std::string file = std::string(ZT_SOURCE_DIR) + "/tests/data/args/llama_factory/inference_qwen3.yaml";
  for (const std::string command : {"export", "chat", "generate", "evaluate", "serve"}) {
    const std::string output = refused(command + " --dtype float32 " + file);
    EXPECT_NE(output.find("'" + file + "' is an arguments file: it comes first, before the flags that override it"),
              std::string::npos)
        << output;
    EXPECT_EQ(output.find("unknown option"), std::string::npos) << output;
  }
}

// --fused_decode ran decode steps through one-launch fused linears until the plain path measured
// faster at every batch size; every generating command says so and what to do, and its help no
// longer lists it.
TEST_F(CommandFlags, FusedDecodeIsRefusedWithWhyItWasRemoved) {
  for (const std::string command : {"generate", "chat", "serve"}) {
    for (const std::string given : {" --fused_decode", " --fused_decode=false", " --fused_decode true"}) {
      const std::string output = refused(command + " --model_name_or_path missing" + given);
      EXPECT_NE(output.find("--fused_decode was removed: the plain decode path (cuBLASLt GEMMs, each step replayed "
                            "as a CUDA graph), which every decode step runs, measured faster at every batch size "
                            "(docs/PERF.md); drop the flag"),
                std::string::npos)
          << command << given << ":\n"
          << output;
      EXPECT_EQ(output.find("unknown option"), std::string::npos) << output;
    }
    const CliRun help = run_zerotune(command + " --help", dir_);
    EXPECT_FALSE(names_flag(help.output, "--fused_decode")) << help.output;
  }
}

// What refusing `flag=maybe` says: the flag and what it takes; empty for a flag that takes any text.
std::string refusal_of_maybe(const Flag& flag) {
  // Words another layer knows: a device, a dtype, a template (a choice's check names only the
  // words it refuses by name, such as finetuning_type's oft; any other is outside the choices).
  if (flag.check && flag.kind != FlagKind::kChoice) return flag.name + ": ";
  switch (flag.kind) {
    case FlagKind::kBool:
      return flag.name + " takes true or false, got 'maybe'";
    case FlagKind::kNumber:
    case FlagKind::kPositiveNumber:
    case FlagKind::kInteger:
    case FlagKind::kPositiveInteger:
      return flag.name + " must be a number, got 'maybe'";
    case FlagKind::kChoice:
      return flag.name + " takes ";
    case FlagKind::kText:
    case FlagKind::kList:
      break;
  }
  return "";
}

// One flag of each kind per command, and one whose words another layer checks (each command
// parses through the same grammar, which FlagTable.RefusesWithWhatAndWhere covers kind by kind).
TEST_F(CommandFlags, ValuesOfTheWrongKindNameTheFlagAndWhatItTakes) {
  for (const Command& command : registry()) {
    if (!command.flags) continue;
    const FlagTable table = command.flags();
    std::set<std::string> tried;  // kinds by number, and "check"
    for (const Flag* flag : table_flags(table)) {
      if (!tried.insert(flag->check ? "check" : std::to_string(static_cast<int>(flag->kind))).second) continue;
      const std::string expected = refusal_of_maybe(*flag);
      if (expected.empty()) continue;
      const std::string output = refused(command.name + " " + flag->name + "=maybe");
      EXPECT_NE(output.find(expected), std::string::npos) << command.name << " " << flag->name << ":\n" << output;
    }
  }
}

// The grammar on a table of its own: aliases, `=`, booleans bare or with a word, kinds, required.
FlagTable small_table() {
  return {.command = "demo",
          .description = "A demonstration.\n",
          .groups = {{"Demo",
                      {{.name = "--count", .kind = FlagKind::kPositiveInteger, .value = "N", .help = "how many"},
                       {.name = "--scale", .kind = FlagKind::kNumber, .value = "X", .help = "a factor"},
                       {.name = "--mode",
                        .kind = FlagKind::kChoice,
                        .help = "how",
                        .default_value = "fast",
                        .choices = {"fast", "slow"}},
                       {.name = "--name", .value = "TEXT", .help = "a name", .aliases = {"--title"}},
                       {.name = "--verbose", .kind = FlagKind::kBool, .help = "say more"}}}},
          .required = {"--name"},
          .removed = {{.name = "--turbo", .reason = "the ordinary path measured faster"}}};
}

TEST(FlagTable, ParsesNamesAliasesAndBooleans) {
  const Flags flags =
      parse_flags({"--title", "x", "--count=3", "--verbose", "--scale", "-1.5", "--mode", "slow"}, small_table());
  EXPECT_EQ(flags.at("--name"), "x");
  EXPECT_EQ(flags.at("--count"), "3");
  EXPECT_EQ(flags.at("--verbose"), "true");
  EXPECT_EQ(flags.at("--scale"), "-1.5");
  EXPECT_EQ(flags.at("--mode"), "slow");
  EXPECT_EQ(parse_flags({"--name", "x", "--verbose", "false"}, small_table()).at("--verbose"), "false");
  // HF's other words for a boolean, kept as "true" or "false".
  EXPECT_EQ(parse_flags({"--name", "x", "--verbose", "yes"}, small_table()).at("--verbose"), "true");
  EXPECT_EQ(parse_flags({"--name", "x", "--verbose=0"}, small_table()).at("--verbose"), "false");
  EXPECT_EQ(integer_flag_or(flags, "--count", 7), 3);
  EXPECT_EQ(integer_flag_or(parse_flags({"--name", "x"}, small_table()), "--count", 7), 7);
  EXPECT_TRUE(flags.is_true("--verbose"));
  EXPECT_EQ(flags.text("--mode"), "slow");
  EXPECT_EQ(flags.integer("--count"), 3);
  // What is not given reads as its default in the table, or as nothing.
  const Flags defaults = parse_flags({"--name", "x"}, small_table());
  EXPECT_EQ(defaults.text("--mode"), "fast");
  EXPECT_EQ(defaults.count("--mode"), 0u);
  EXPECT_FALSE(defaults.is_true("--verbose"));
  EXPECT_EQ(defaults.text("--scale"), "");
}

// After an arguments file, `name=null` (or `~`) unsets what the file set, as llamafactory-cli
// reads these words as YAML; `--name null` is the text, as in HF's parser.
TEST(FlagTable, ANameValueNullAfterAFileUnsetsTheOption) {
  const std::string file = ::testing::TempDir() + "/flag_table_null.json";
  std::ofstream(file) << R"({"name": "x", "mode": "slow", "count": 3})";
  const Flags unset = parse_flags({file, "mode=null", "count=~"}, small_table());
  EXPECT_EQ(unset.count("--mode"), 0u);
  EXPECT_EQ(unset.text("--mode"), "fast");  // the table's default again
  EXPECT_EQ(unset.count("--count"), 0u);
  EXPECT_EQ(unset.at("--name"), "x");
  EXPECT_EQ(parse_flags({file, "--name", "null"}, small_table()).at("--name"), "null");
  EXPECT_THROW(parse_flags({file, "name=Null"}, small_table()), UsageError) << "unset, and --name is required";
}

// The message of the UsageError parse_flags throws for `args`.
std::string usage_error(const std::vector<std::string>& args) {
  try {
    parse_flags(args, small_table());
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(FlagTable, RefusesWithWhatAndWhere) {
  EXPECT_EQ(usage_error({"--name", "x", "--count", "0"}), "--count must be a positive whole number, got '0'");
  EXPECT_EQ(usage_error({"--name", "x", "--count", "2.5"}), "--count must be a whole number, got '2.5'");
  EXPECT_EQ(usage_error({"--name", "x", "--mode", "medium"}), "--mode takes fast or slow, got 'medium'");
  EXPECT_EQ(usage_error({"--name", "x", "--verbose=maybe"}), "--verbose takes true or false, got 'maybe'");
  EXPECT_EQ(usage_error({"--name", "x", "stray"}), "unknown option 'stray'; see `zerotune demo --help`");
  EXPECT_EQ(usage_error({"--name"}), "option --name needs a value");
  EXPECT_EQ(usage_error({"--count", "1"}), "missing --name; see `zerotune demo --help`");
  EXPECT_EQ(usage_error({"--scael", "1"}),
            "unknown option '--scael' (did you mean --scale?); see `zerotune demo --help`");
  EXPECT_EQ(usage_error({"--fp16"}), "unknown option '--fp16'; see `zerotune demo --help`");
  EXPECT_EQ(usage_error({"--name", "x", "--turbo"}),
            "--turbo was removed: the ordinary path measured faster; drop the flag");
  EXPECT_EQ(usage_error({"--turbo=false"}), "--turbo was removed: the ordinary path measured faster; drop the flag");
}

TEST(FlagTable, HelpShowsUsageKindsChoicesDefaultsAndAliases) {
  const std::string help = flags_help(small_table());
  EXPECT_EQ(help.rfind("usage: zerotune demo --name TEXT [options]\n\nA demonstration.\n\nDemo:\n", 0), 0u) << help;
  EXPECT_TRUE(has_entry(help, "--count N")) << help;
  EXPECT_TRUE(has_entry(help, "--mode {fast,slow}")) << help;
  EXPECT_NE(help.find("how [fast]"), std::string::npos) << help;
  EXPECT_NE(help.find("a name (also --title)"), std::string::npos) << help;
  EXPECT_TRUE(has_entry(help, "--verbose")) << help;
}

}  // namespace
}  // namespace zt::cli
