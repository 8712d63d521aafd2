// The command lines README.md shows users, read from its ```bash blocks and checked against
// the code that will read them: each `zerotune train` line, alone or under `zerotune launch`,
// parses, names only flags zerotune honours, and plans without a warning (its DeepSpeed
// config included, for the launch's world size); every flag of the other commands is one
// their --help lists. A renamed flag, or a quick start drifting from the code, fails here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/launch_command.h"
#include "models/config/config.h"
#include "tests/common/process_test_util.h"
#include "train/args/training_arguments.h"
#include "train/args/training_plan.h"

namespace zt::testing {
namespace {

namespace fs = std::filesystem;
using Words = std::vector<std::string>;

struct ReadmeCommand {
  std::string text;  // as the README shows it, continuation lines joined
  Words words;       // as the shell splits it
};

// A shell line's words: quotes ('...', "..." with \" and \\) group, a backslash escapes, `#`
// at the start of a word comments out the rest; pipes, redirections and `;`/`&&` end the command.
Words shell_words(const std::string& line) {
  Words words;
  std::string word;
  bool in_word = false;
  auto end_word = [&] {
    if (in_word) words.push_back(word);
    word.clear();
    in_word = false;
  };
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      end_word();
      continue;
    }
    if (!in_word && std::string_view("#|;&<>").find(c) != std::string_view::npos) break;
    in_word = true;
    if (c == '\'') {
      const std::size_t close = std::min(line.find('\'', i + 1), line.size());
      word += line.substr(i + 1, close - i - 1);
      i = close;
    } else if (c == '"') {
      for (++i; i < line.size() && line[i] != '"'; ++i) {
        if (line[i] == '\\' && i + 1 < line.size()) ++i;
        word += line[i];
      }
    } else {
      if (c == '\\' && i + 1 < line.size()) ++i;
      word += line[i];
    }
  }
  end_word();
  return words;
}

// Every command of README.md's ```bash blocks that runs zerotune (after any VAR=value).
std::vector<ReadmeCommand> readme_commands() {
  std::vector<ReadmeCommand> commands;
  std::istringstream readme(read_text(fs::path(ZT_SOURCE_DIR) / "README.md"));
  bool in_bash = false;
  std::string line, pending;
  while (std::getline(readme, line)) {
    if (line.rfind("```", 0) == 0) {
      in_bash = !in_bash && line == "```bash";
      continue;
    }
    if (!in_bash) continue;
    if (!line.empty() && line.back() == '\\') {
      pending += line.substr(0, line.size() - 1);
      continue;
    }
    ReadmeCommand command{pending + line, {}};
    pending.clear();
    command.words = shell_words(command.text);
    while (!command.words.empty() && command.words[0].find('=') != std::string::npos)
      command.words.erase(command.words.begin());
    if (!command.words.empty() && fs::path(command.words[0]).filename() == "zerotune") commands.push_back(command);
  }
  return commands;
}

// `zerotune train` with `args`: parsed, every flag honoured, planned for `world_size` ranks
// with no warning. The README's relative --deepspeed path is the shipped file.
void expect_train_command_holds(Words args, int world_size, const std::string& shown) {
  for (std::size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "--deepspeed" && args[i + 1].front() != '{') {
      ASSERT_TRUE(fs::exists(fs::path(ZT_SOURCE_DIR) / args[i + 1])) << args[i + 1] << " is not shipped: " << shown;
      args[i + 1] = (fs::path(ZT_SOURCE_DIR) / args[i + 1]).string();
    }
  try {
    const train::TrainingArguments parsed = train::parse_training_arguments(args);
    EXPECT_TRUE(parsed.other_arguments.empty()) << "not honoured: " << parsed.other_arguments.dump() << " in " << shown;
    for (const std::string& warning : parsed.warnings) ADD_FAILURE() << "warning: " << warning << " for " << shown;
    // The README's model is Qwen2.5-7B; the config of the same architecture is a fixture.
    const auto config = models::load_config(std::string(ZT_SOURCE_DIR) + "/tests/data/models/qwen2.5-7b");
    const auto thousand_samples = [](std::int64_t micro) { return (1000 + micro - 1) / micro; };
    const train::TrainingPlan plan = train::plan_training(parsed, thousand_samples, world_size, config.hidden_size);
    for (const std::string& warning : plan.warnings) ADD_FAILURE() << "warning: " << warning << " for " << shown;
  } catch (const std::exception& error) {
    ADD_FAILURE() << error.what() << "\n  for the README's " << shown;
  }
}

TEST(ReadmeCommands, TrainCommandsParseAndPlanWithoutWarnings) {
  int alone = 0, launched = 0;
  for (const ReadmeCommand& command : readme_commands()) {
    const Words& words = command.words;
    if (words.size() > 1 && words[1] == "train") {
      expect_train_command_holds(Words(words.begin() + 2, words.end()), 1, command.text);
      ++alone;
    } else if (words.size() > 1 && words[1] == "launch") {
      const distributed::LaunchOptions launch = cli::read_launch_options(Words(words.begin() + 2, words.end()));
      ASSERT_GE(launch.command.size(), 2u) << command.text;
      if (launch.command[1] != "train") continue;
      expect_train_command_holds(Words(launch.command.begin() + 2, launch.command.end()),
                                 launch.nproc_per_node * launch.nnodes, command.text);
      ++launched;
    }
  }
  EXPECT_GE(alone, 1) << "the README's quick start shows no `zerotune train` run";
  EXPECT_GE(launched, 1) << "the README's quick start shows no `zerotune launch ... zerotune train` run";
}

// Whether `help` names `flag` as a whole word (--tp, not the start of --tp_size).
bool lists_flag(const std::string& help, const std::string& flag) {
  for (std::size_t at = help.find(flag); at != std::string::npos; at = help.find(flag, at + 1)) {
    const char next = at + flag.size() < help.size() ? help[at + flag.size()] : ' ';
    if (!std::isalnum(static_cast<unsigned char>(next)) && next != '_') return true;
  }
  return false;
}

class ReadmeOtherCommands : public FolderTest {};

TEST_F(ReadmeOtherCommands, EveryFlagIsOneTheCommandsHelpLists) {
  int checked = 0;
  for (const ReadmeCommand& command : readme_commands()) {
    const Words& words = command.words;
    if (words.size() < 2 || words[1] == "train" || words[1] == "launch" || words[1].rfind("--", 0) == 0) continue;
    const CliRun help = run_zerotune(words[1] + " --help", dir_);
    ASSERT_EQ(help.exit_code, 0) << "zerotune " << words[1] << " --help: " << help.output;
    for (std::size_t i = 2; i < words.size(); ++i) {
      if (words[i].rfind("--", 0) != 0) continue;
      const std::string flag = words[i].substr(0, words[i].find('='));
      EXPECT_TRUE(lists_flag(help.output, flag))
          << flag << " is not in `zerotune " << words[1] << " --help`, in the README's " << command.text;
      ++checked;
    }
  }
  EXPECT_GE(checked, 5) << "found too few README commands to check; has the README's layout changed?";
}

// The train commands' flags, alone or launched, as `zerotune train --help` (the binary's) lists
// them under its sections; the values of README's enum flags among the choices shown.
TEST_F(ReadmeOtherCommands, TrainFlagsAreInTrainHelp) {
  const CliRun help = run_zerotune("train --help", dir_);
  ASSERT_EQ(help.exit_code, 0) << help.output;
  for (const char* section : {"\nModel and output:\n", "\nData:\n", "\nFine-tuning method:\n",
                              "\nDeepSpeed and distributed:\n", "\nLogging and saving:\n"})
    EXPECT_NE(help.output.find(section), std::string::npos) << section << " missing from\n" << help.output;
  int checked = 0;
  for (const ReadmeCommand& command : readme_commands()) {
    const Words& words = command.words;
    const auto train = std::find(words.begin(), words.end(), "train");
    if (words.size() < 2 || (words[1] != "train" && words[1] != "launch") || train == words.end()) continue;
    for (auto word = train + 1; word != words.end(); ++word) {
      if (word->rfind("--", 0) != 0) continue;
      EXPECT_TRUE(lists_flag(help.output, *word)) << *word << " is not in `zerotune train --help`: " << command.text;
      const bool enum_flag = *word == "--finetuning_type" || *word == "--lr_scheduler_type";
      if (enum_flag && word + 1 != words.end()) {
        EXPECT_TRUE(lists_flag(help.output, *(word + 1))) << *word << " " << *(word + 1) << " not among its choices";
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 20) << "found too few README train flags to check; has the README's layout changed?";
}

}  // namespace
}  // namespace zt::testing
