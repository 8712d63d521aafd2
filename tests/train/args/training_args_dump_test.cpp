// TrainingArguments.to_json_string() as transformers writes it, every field with its value: the
// record a Trainer run leaves (tests/data/args/hf/training_args_dump.json) read back as an
// arguments file, as HfArgumentParser.parse_json_file reads it.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/common/training_arguments_test_util.h"
#include "train/args/training_arguments.h"

namespace zt::train {
namespace {

const std::string kDump =
    (std::filesystem::path(ZT_SOURCE_DIR) / "tests/data/args/hf/training_args_dump.json").string();

using testing::joined;

TrainingArguments parse_dump(std::vector<std::string> flags = {}) {
  std::vector<std::string> argv = {kDump, "--model_name_or_path", "m", "--train_file", "t.json"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  return parse_training_arguments(argv);
}

TEST(TrainingArgsDump, ReadsBackWithTheRunsSettings) {
  const TrainingArguments args = parse_dump();
  // do_train is false in a dump of a run that never set it: Trainer.train() trains regardless.
  EXPECT_FALSE(args.do_train);
  EXPECT_EQ(args.gradient_accumulation_steps, 16);
  EXPECT_EQ(args.learning_rate, 1e-4);
  EXPECT_EQ(args.adam_beta2, 0.95);
  EXPECT_EQ(args.lr_scheduler_type, "cosine");
  EXPECT_EQ(args.warmup_ratio, 0.05);
  EXPECT_TRUE(args.bf16);
  EXPECT_TRUE(args.gradient_checkpointing);
  EXPECT_TRUE(args.logging_first_step);
  EXPECT_EQ(args.save_total_limit, std::optional<std::int64_t>(2));
  EXPECT_EQ(args.eval_strategy, IntervalStrategy::kNo);
  // The default accelerator_config written out whole, dispatch_batches false (what every rank
  // does anyway) included, needs no word; nor does any other default.
  EXPECT_TRUE(args.warnings.empty()) << joined(args.warnings);
}

TEST(TrainingArgsDump, AnAcceleratorConfigOffItsDefaultsIsStillNamed) {
  TrainingArguments args = parse_dump({"--accelerator_config", R"({"even_batches": false})"});
  EXPECT_NE(joined(args.warnings).find("--accelerator_config has no effect"), std::string::npos)
      << joined(args.warnings);
  args = parse_dump({"--accelerator_config", R"({"dispatch_batches": null, "use_configured_state": false})"});
  EXPECT_TRUE(args.warnings.empty()) << joined(args.warnings);
}

}  // namespace
}  // namespace zt::train
