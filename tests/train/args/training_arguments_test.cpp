// `zerotune train` arguments: HF names and defaults, flag syntaxes, a JSON file, and errors
// that name every bad or conflicting argument.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/usage_error.h"
#include "tests/common/op_test_util.h"
#include "tests/common/training_arguments_test_util.h"
#include "train/args/training_arguments.h"

namespace zt::train {
namespace {

std::vector<std::string> base() {
  return {"--model_name_or_path", "m", "--output_dir", "out", "--train_file", "d.json"};
}

std::vector<std::string> with(std::vector<std::string> extra) {
  std::vector<std::string> args = base();
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::string error_for(const std::vector<std::string>& args) {
  return testing::error_of([&] { parse_training_arguments(args); });
}

TEST(TrainingArguments, HfDefaults) {
  TrainingArguments args = parse_training_arguments(base());
  EXPECT_EQ(args.learning_rate, 5e-5);
  EXPECT_EQ(args.num_train_epochs, 3.0);
  EXPECT_EQ(args.max_steps, -1);
  EXPECT_EQ(args.per_device_train_batch_size, 8);
  EXPECT_EQ(args.lr_scheduler_type, "linear");
  EXPECT_EQ(args.save_steps, 500);
  EXPECT_EQ(args.seed, 42);
  EXPECT_FALSE(args.bf16);
  EXPECT_EQ(args.model_name_or_path, "m");
}

TEST(TrainingArguments, EveryFlagSyntax) {
  TrainingArguments args = parse_training_arguments(
      with({"--bf16", "--gradient_checkpointing", "false", "--learning_rate=2e-4", "--max_steps", "-1", "--packing",
            "--lora_rank", "16", "--save_total_limit", "3", "--evaluation_strategy", "no"}));
  EXPECT_TRUE(args.bf16);
  EXPECT_FALSE(args.gradient_checkpointing);
  EXPECT_EQ(args.learning_rate, 2e-4);
  EXPECT_EQ(args.max_steps, -1);
  EXPECT_TRUE(args.packing);
  EXPECT_EQ(args.lora_rank, 16);
  ASSERT_TRUE(args.save_total_limit);
  EXPECT_EQ(*args.save_total_limit, 3);
  EXPECT_TRUE(args.was_given("eval_strategy"));
}

TEST(TrainingArguments, WarmupStepsAsHfComputesThem) {
  TrainingArguments args = parse_training_arguments(with({"--warmup_ratio", "0.1"}));
  EXPECT_EQ(args.warmup_steps_for(95), 10);  // ceil(9.5)
  args = parse_training_arguments(with({"--warmup_ratio", "0.1", "--warmup_steps", "3"}));
  EXPECT_EQ(args.warmup_steps_for(95), 3);
}

TEST(TrainingArguments, JsonFileOfTheSameNames) {
  auto path = std::filesystem::temp_directory_path() / "zt_train_args.json";
  std::ofstream(path) << R"({"model_name_or_path": "m", "output_dir": "o", "train_file": "t.json",
                            "bf16": true, "per_device_train_batch_size": 4, "learning_rate": 1e-4,
                            "save_total_limit": null})";
  TrainingArguments args = parse_training_arguments({path.string()});
  EXPECT_TRUE(args.bf16);
  EXPECT_EQ(args.per_device_train_batch_size, 4);
  EXPECT_EQ(args.learning_rate, 1e-4);
  EXPECT_FALSE(args.save_total_limit);
  std::ofstream(path) << R"({"model_name_or_path": "m", "output_dir": "o", "train_file": "t", "lerning_rate": 1})";
  std::string msg = error_for({path.string()});
  EXPECT_NE(msg.find(path.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean --learning_rate"), std::string::npos) << msg;
  std::filesystem::remove(path);
}

TEST(TrainingArguments, UnknownFlagSuggestsTheClosest) {
  std::string msg = error_for(with({"--per_device_batch_size", "4"}));
  EXPECT_NE(msg.find("--per_device_batch_size"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean --per_device_eval_batch_size"), std::string::npos) << msg;
}

TEST(TrainingArguments, BadValuesNameTheFlagAndWhatIsAccepted) {
  std::string msg = error_for(with({"--learning_rate", "fast"}));
  EXPECT_NE(msg.find("--learning_rate must be a number"), std::string::npos) << msg;
  msg = error_for(with({"--lr_scheduler_type", "exp"}));
  EXPECT_NE(msg.find("cosine_with_min_lr"), std::string::npos) << msg;
  msg = error_for(with({"--finetuning_type", "qlora"}));
  EXPECT_NE(msg.find("full, freeze, lora or ptuning"), std::string::npos) << msg;
  // LLaMA-Factory's OFT (examples/extras/oft) is named with the method to train instead.
  msg = error_for(with({"--finetuning_type", "oft"}));
  EXPECT_NE(msg.find("--finetuning_type oft (LLaMA-Factory): OFT (orthogonal fine-tuning) is not supported by "
                     "zerotune; train LoRA (finetuning_type lora) instead"),
            std::string::npos)
      << msg;
  msg = error_for(with({"--seed", "4.5"}));
  EXPECT_NE(msg.find("--seed must be a whole number"), std::string::npos) << msg;
  msg = error_for(with({"--device", "gpu0"}));
  EXPECT_NE(msg.find("cuda:N"), std::string::npos) << msg;
  msg = error_for(with({"--output_dir"}));
  EXPECT_NE(msg.find("--output_dir needs a value"), std::string::npos) << msg;
  // HF's fields without a member are checked as the honoured flags are.
  msg = error_for(with({"--past_index", "1.5"}));
  EXPECT_NE(msg.find("--past_index must be a whole number, got '1.5'"), std::string::npos) << msg;
}

// The arguments' problems are the command line's: a UsageError (exit code 2), the template's
// name among them, checked with the rest before anything loads.
TEST(TrainingArguments, ProblemsAreUsageErrorsTheTemplateNameIncluded) {
  EXPECT_THROW(parse_training_arguments(with({"--learning_rate", "fast"})), UsageError);
  EXPECT_THROW(parse_training_arguments({"--output_dir", "out"}), UsageError);
  const std::string msg = error_for(with({"--template", "qwen4", "--warmup_ratio", "2"}));
  testing::expect_mentions(msg, {"the arguments have 2 problems", "--template: unknown chat template 'qwen4'",
                                 "accepted: qwen, qwen3, qwen3_nothink, glm4, chatglm3, empty (LLaMA-Factory's)"});
  EXPECT_EQ(parse_training_arguments(with({"--template", "glm4"})).template_name, "glm4");
}

TEST(TrainingArguments, ConflictsAndMissingAreReportedTogether) {
  std::string msg =
      error_for({"--bf16", "--fp16", "--finetuning_type", "full", "--lora_rank", "4", "--eval_strategy", "steps"});
  for (const char* part :
       {"--model_name_or_path is required", "--output_dir is required", "--train_file is required", "--bf16 and --fp16",
        "--lora_rank applies to --finetuning_type lora", "--eval_strategy steps needs evaluation data"})
    EXPECT_NE(msg.find(part), std::string::npos) << part << "\n" << msg;
}

// TrainingArguments.__post_init__ turns do_eval on for any eval_strategy but "no": HF's
// scripts and LLaMA-Factory's workflow then evaluate once more at the end.
TEST(TrainingArguments, AnEvalStrategyTurnsDoEvalOnAsHfDoes) {
  EXPECT_FALSE(parse_training_arguments(base()).do_eval);
  EXPECT_TRUE(parse_training_arguments(with({"--eval_strategy", "steps", "--validation_file", "v.json"})).do_eval);
  EXPECT_TRUE(parse_training_arguments(with({"--eval_strategy", "epoch", "--val_size", "0.1"})).do_eval);
  const std::string msg = error_for(with({"--eval_strategy", "steps"}));
  EXPECT_NE(msg.find("--eval_strategy steps needs evaluation data"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("--do_eval needs"), std::string::npos) << msg;  // one message for one mistake
}

// A LLaMA-Factory file switched to another method (finetuning_type=full on its LoRA example)
// keeps the LoRA fields LLaMA-Factory ignores, each with a warning; on a command line they are
// a contradiction (ConflictsAndMissingAreReportedTogether).
TEST(TrainingArguments, ALlamaFactoryFileIgnoresAnotherMethodsFields) {
  const TrainingArguments args = testing::yaml(
      "model_name_or_path: m\noutput_dir: o\nstage: sft\ndataset: d\nfinetuning_type: lora\nlora_rank: 16\n"
      "lora_target: all\n",
      {"finetuning_type=full"});
  EXPECT_EQ(args.finetuning_type, FinetuningType::kFull);
  const std::string warnings = testing::joined(args.warnings);
  for (const char* flag : {"--lora_rank applies to --finetuning_type lora only, but the type is full; it has no effect",
                           "--lora_target applies"})
    EXPECT_NE(warnings.find(flag), std::string::npos) << warnings;
}

TEST(TrainingArguments, DataFlags) {
  TrainingArguments args = parse_training_arguments(base());
  EXPECT_EQ(args.overlong_samples, Overlong::kTruncate);
  EXPECT_EQ(args.padding, Padding::kNone);
  args = parse_training_arguments(with({"--overlong_samples", "skip", "--padding", "longest"}));
  EXPECT_EQ(args.overlong_samples, Overlong::kSkip);
  EXPECT_EQ(args.padding, Padding::kLongest);
  std::string msg = error_for(with({"--padding", "max_length"}));
  EXPECT_NE(msg.find("none or longest"), std::string::npos) << msg;
  msg = error_for(with({"--overlong_samples", "drop"}));
  EXPECT_NE(msg.find("truncate or skip"), std::string::npos) << msg;
  msg = error_for(with({"--packing", "--padding", "longest"}));
  EXPECT_NE(msg.find("--packing and --padding longest both given"), std::string::npos) << msg;
}

TEST(TrainingArguments, NamedValuesAreReadAndWrittenByName) {
  TrainingArguments args = parse_training_arguments(
      with({"--eval_strategy", "epoch", "--validation_file", "v.json", "--finetuning_type", "full"}));
  EXPECT_EQ(args.eval_strategy, IntervalStrategy::kEpoch);
  EXPECT_EQ(args.save_strategy, IntervalStrategy::kSteps);
  EXPECT_EQ(args.finetuning_type, FinetuningType::kFull);
  const nlohmann::json json = nlohmann::json::parse(training_arguments_json(args));
  EXPECT_EQ(json["eval_strategy"], "epoch");
  EXPECT_EQ(json["save_strategy"], "steps");
  EXPECT_EQ(json["finetuning_type"], "full");
  EXPECT_EQ(json["overlong_samples"], "truncate");
  EXPECT_EQ(json["padding"], "none");
  EXPECT_NE(training_arguments_help().find("[lora]"), std::string::npos);
  EXPECT_EQ(error_for(with({"--save_strategy", "often"})), "--save_strategy takes no, steps or epoch, got 'often'");
}

TEST(TrainingArguments, RangesAreChecked) {
  std::string msg =
      error_for(with({"--per_device_train_batch_size", "0", "--warmup_ratio", "1.5", "--lora_dropout", "1"}));
  EXPECT_NE(msg.find("--per_device_train_batch_size must be > 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--warmup_ratio must be in [0, 1]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--lora_dropout must be in [0, 1)"), std::string::npos) << msg;
}

TEST(TrainingArguments, HelpListsEveryFlagWithItsDefault) {
  std::string help = training_arguments_help();
  EXPECT_NE(help.find("--learning_rate"), std::string::npos);
  EXPECT_NE(help.find("[5e-05]"), std::string::npos) << help;
  EXPECT_NE(help.find("--finetuning_type"), std::string::npos);
}

}  // namespace
}  // namespace zt::train
