// `zerotune train --help` (training_arguments_help): every flag once, under its section, with
// the names an enum flag takes, --stage described as it is handled, and lines that fit.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "train/args/argument_table.h"
#include "train/args/training_arguments.h"
#include "train/optim/lr_scheduler.h"

namespace zt::train {
namespace {

// The lines of --help that start a flag's entry ("  --name ..."), by flag name.
std::map<std::string, std::string> flag_lines(const std::string& help) {
  std::map<std::string, std::string> lines;
  std::istringstream in(help);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("  --", 0) != 0) continue;
    const std::string name = line.substr(4, line.find_first_of(" {", 4) - 4);
    EXPECT_EQ(lines.count(name), 0u) << "--" << name << " is listed twice";
    lines[name] = line;
  }
  return lines;
}

// The entry of `flag`: its first line and the indented lines that continue it, each run of white
// space one space (the help is wrapped anywhere).
std::string entry_of(const std::string& help, const std::string& flag) {
  const std::size_t start = help.find("  --" + flag + " ");
  const std::size_t alone = help.find("  --" + flag + "\n");
  std::size_t at = std::min(start, alone);
  if (at == std::string::npos) return "";
  std::size_t end = help.find('\n', at);
  while (end != std::string::npos && help.compare(end + 1, 6, "      ") == 0) end = help.find('\n', end + 1);
  std::istringstream words(help.substr(at, end - at));
  std::string entry;
  for (std::string word; words >> word;) entry += (entry.empty() ? "" : " ") + word;
  return entry;
}

TEST(TrainHelp, GroupsTheFlagsIntoSections) {
  std::string help = "\n";  // appended: GCC 12 warns falsely (-Wrestrict) on "\n" + a temporary string
  help += training_arguments_help();
  std::size_t previous = 0;
  for (const char* title :
       {"Model and output:", "Data:", "Training:", "Optimizer and learning-rate schedule:", "Precision and memory:",
        "Fine-tuning method:", "DeepSpeed and distributed:", "Evaluation:", "Logging and saving:"}) {
    const std::size_t at = help.find(std::string("\n") + title + "\n");
    ASSERT_NE(at, std::string::npos) << title << " missing from\n" << help;
    EXPECT_GE(at, previous) << title << " out of order";
    previous = at;
  }
  // A flag sits in its section: between its title and the next one.
  const std::size_t method = help.find("Fine-tuning method:"), distributed = help.find("DeepSpeed and distributed:");
  for (const char* flag : {"--finetuning_type", "--lora_rank", "--pre_seq_len"}) {
    EXPECT_GT(help.find(flag), method) << flag;
    EXPECT_LT(help.find(flag), distributed) << flag;
  }
  EXPECT_GT(help.find("  --deepspeed"), distributed);
}

TEST(TrainHelp, ListsEveryFlagOnce) {
  const std::map<std::string, std::string> lines = flag_lines(training_arguments_help());
  for (const ArgumentSpec& spec : argument_table()) EXPECT_EQ(lines.count(spec.name), 1u) << spec.name;
  EXPECT_EQ(lines.size(), argument_table().size());
}

TEST(TrainHelp, ListsTheChoicesOfEveryEnumFlag) {
  const std::string help = training_arguments_help();
  const std::map<std::string, std::string> lines = flag_lines(help);
  EXPECT_NE(lines.at("eval_strategy").find("--eval_strategy {no,steps,epoch}"), std::string::npos);
  EXPECT_NE(lines.at("save_strategy").find("{no,steps,epoch}"), std::string::npos);
  EXPECT_NE(lines.at("logging_strategy").find("{no,steps,epoch}"), std::string::npos);
  EXPECT_NE(lines.at("finetuning_type").find("{full,freeze,lora,ptuning}"), std::string::npos);
  EXPECT_NE(lines.at("overlong_samples").find("{truncate,skip}"), std::string::npos);
  EXPECT_NE(lines.at("padding").find("{none,longest}"), std::string::npos);
  EXPECT_NE(lines.at("attn_impl").find("{zerotune,cudnn}"), std::string::npos);
  // Every scheduler name, on the flag's line or in its help when they do not fit there.
  const std::string schedules = entry_of(help, "lr_scheduler_type");
  for (const std::string& name : hf_schedule_names())
    EXPECT_NE(schedules.find(name), std::string::npos) << name << " not in\n" << schedules;
}

TEST(TrainHelp, DescribesStageAsItIsHandled) {
  const std::string stage = entry_of(training_arguments_help(), "stage");
  EXPECT_NE(stage.find("sft"), std::string::npos) << stage;
  EXPECT_NE(stage.find("pt (pre-training on plain text"), std::string::npos) << stage;
  EXPECT_NE(stage.find("or dpo (preference training"), std::string::npos) << stage;
  EXPECT_NE(stage.find("rm, ppo and kto are refused"), std::string::npos) << stage;
  EXPECT_EQ(stage.find("only"), std::string::npos) << "sft is not the only stage: " << stage;
}

TEST(TrainHelp, LinesFitAndLongFlagsKeepTheirHelpApart) {
  const std::string help = training_arguments_help();
  std::istringstream in(help);
  for (std::string line; std::getline(in, line);) EXPECT_LE(line.size(), 100u) << line;
  // A flag as wide as the column gets its help on the next line, never glued to its name.
  const std::string entry = entry_of(help, "disable_gradient_checkpointing");
  EXPECT_EQ(entry.find("checkpointingLLaMA"), std::string::npos) << entry;
  EXPECT_NE(help.find("  --disable_gradient_checkpointing\n" + std::string(34, ' ') + "LLaMA-Factory"),
            std::string::npos)
      << entry;
  EXPECT_NE(entry_of(help, "learning_rate").find("[5e-05]"), std::string::npos);
}

}  // namespace
}  // namespace zt::train
