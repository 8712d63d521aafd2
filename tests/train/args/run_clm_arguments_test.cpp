// transformers' run_clm.py arguments in `zerotune train`: its data options honoured (read into
// their members, the run_clm data path chosen), its hub and from-scratch options refused naming
// the option and what to do, the others accepted with a word; and its command line as a user
// runs it on the tiny model (txt train and validation files, a small block_size) trains and
// evaluates.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "runtime/usage_error.h"
#include "tests/common/op_test_util.h"
#include "tests/common/process_test_util.h"
#include "train/args/dataset_selection.h"
#include "train/args/training_arguments.h"

namespace zt::train {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> clm(std::vector<std::string> extra) {
  std::vector<std::string> args = {"--model_name_or_path", "m",     "--output_dir", "out",
                                   "--train_file",         "d.txt", "--do_train"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::string error_for(const std::vector<std::string>& args) {
  return testing::error_of([&] { parse_training_arguments(args); });
}

std::string joined(const std::vector<std::string>& lines) {
  std::string all;
  for (const std::string& line : lines) all += line + "\n";
  return all;
}

TEST(RunClmArguments, DataOptionsAreHonoured) {
  const TrainingArguments args = parse_training_arguments(
      clm({"--block_size", "128", "--validation_split_percentage", "10", "--keep_linebreaks", "false",
           "--max_train_samples", "7", "--max_eval_samples", "3", "--preprocessing_num_workers", "4"}));
  EXPECT_TRUE(args.run_clm_style());
  EXPECT_EQ(args.block_size, std::optional<std::int64_t>(128));
  EXPECT_EQ(args.validation_split_percentage, 10);
  EXPECT_FALSE(args.keep_linebreaks);
  EXPECT_EQ(args.max_train_samples, std::optional<std::int64_t>(7));
  EXPECT_EQ(args.max_eval_samples, std::optional<std::int64_t>(3));
  EXPECT_EQ(args.preprocessing_num_workers, std::optional<std::int64_t>(4));
  // Without run_clm's names a .txt file stays zerotune's one sample per line, with a word.
  const TrainingArguments plain =
      parse_training_arguments({"--model_name_or_path", "m", "--output_dir", "out", "--train_file", "d.txt"});
  EXPECT_FALSE(plain.run_clm_style());
  EXPECT_NE(joined(plain.warnings).find("give --block_size N"), std::string::npos);
  // A .csv file is run_clm's alone.
  EXPECT_TRUE(parse_training_arguments(
                  {"--model_name_or_path", "m", "--output_dir", "out", "--train_file", "d.csv", "--do_train"})
                  .run_clm_style());
}

TEST(RunClmArguments, TheSplitIsEvaluationData) {
  // --do_eval without --validation_file: run_clm's split evaluates; at 0 % there is none.
  EXPECT_NO_THROW(parse_training_arguments(clm({"--block_size", "8", "--do_eval"})));
  const std::string message = error_for(clm({"--block_size", "8", "--do_eval", "--validation_split_percentage", "0"}));
  EXPECT_NE(message.find("--do_eval needs evaluation data"), std::string::npos) << message;
}

TEST(RunClmArguments, ContradictionsAndRangesAreRefused) {
  std::string message =
      error_for({"--model_name_or_path", "m", "--output_dir", "out", "--train_file", "d.txt", "--block_size", "8"});
  EXPECT_NE(message.find("run_clm.py trains only with --do_train"), std::string::npos) << message;
  message = error_for(clm({"--block_size", "8", "--packing"}));
  EXPECT_NE(message.find("drop --packing"), std::string::npos) << message;
  message = error_for(clm({"--block_size", "8", "--max_length", "16"}));
  EXPECT_NE(message.find("--block_size and --max_length"), std::string::npos) << message;
  message = error_for(clm({"--block_size", "0"}));
  EXPECT_NE(message.find("--block_size must be > 0"), std::string::npos) << message;
  message = error_for(clm({"--validation_split_percentage", "100"}));
  EXPECT_NE(message.find("--validation_split_percentage must be in [0, 100)"), std::string::npos) << message;
  message = error_for(clm({"--block_size", "8", "--val_size", "0.1"}));
  EXPECT_NE(message.find("--val_size with run_clm.py's data options"), std::string::npos) << message;
}

TEST(RunClmArguments, HubAndFromScratchOptionsAreRefusedSayingWhatToDo) {
  std::string message = error_for(clm({"--dataset_name", "wikitext", "--dataset_config_name", "wikitext-2-raw-v1"}));
  EXPECT_NE(message.find("--dataset_name wikitext is not supported: zerotune reads local data files"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("--train_file train.jsonl"), std::string::npos) << message;
  EXPECT_NE(message.find("--dataset_config_name wikitext-2-raw-v1"), std::string::npos) << message;
  message = error_for(clm({"--torch_dtype", "bfloat16"}));
  EXPECT_NE(message.find("--torch_dtype bfloat16 is not supported"), std::string::npos) << message;
  EXPECT_NE(message.find("--bf16"), std::string::npos) << message;
  message = error_for(clm({"--tokenizer_name", "other/tokenizer"}));
  EXPECT_NE(message.find("--tokenizer_name other/tokenizer is not supported"), std::string::npos) << message;
  message = error_for(clm({"--model_type", "gpt2"}));
  EXPECT_NE(message.find("--model_type gpt2 is not supported"), std::string::npos) << message;
  // The model's own folder as tokenizer or config, and float32, ask for nothing else.
  EXPECT_NO_THROW(
      parse_training_arguments(clm({"--tokenizer_name", "m", "--config_name", "m", "--torch_dtype", "float32"})));
}

TEST(RunClmArguments, OptionsWithoutEffectAreWarnedAboutWithoutNamingLlamaFactory) {
  const TrainingArguments args = parse_training_arguments(
      clm({"--block_size", "8", "--streaming", "--overwrite_cache", "--cache_dir", "/tmp/c", "--token", "hf_abc",
           "--use_fast_tokenizer", "false", "--trust_remote_code", "true", "--low_cpu_mem_usage"}));
  const std::string warnings = joined(args.warnings);
  for (const char* name :
       {"--streaming has no effect", "--overwrite_cache has no effect", "--cache_dir has no effect",
        "--token has no effect", "--use_fast_tokenizer has no effect", "--trust_remote_code has no effect"})
    EXPECT_NE(warnings.find(name), std::string::npos) << name << "\n" << warnings;
  EXPECT_EQ(warnings.find("LLaMA-Factory"), std::string::npos) << warnings;
  EXPECT_EQ(warnings.find("hf_abc"), std::string::npos) << warnings;  // a secret stays out of messages
  EXPECT_NE(training_arguments_json(args).find("<TOKEN>"), std::string::npos) << training_arguments_json(args);
}

class RunClmData : public testing::FolderTest {
 protected:
  fs::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return dir_ / name;
  }
};

TEST_F(RunClmData, SelectionSplitsAndReadsEachFormat) {
  std::string lines;
  for (int i = 0; i < 20; ++i) lines += "line " + std::to_string(i) + "\n";
  const fs::path txt = write("d.txt", lines);
  TrainingArguments args =
      parse_training_arguments({"--model_name_or_path", "m", "--output_dir", "out", "--train_file", txt.string(),
                                "--do_train", "--validation_split_percentage", "10"});
  SelectedData data = select_data(args);
  ASSERT_TRUE(data.eval.has_value());
  EXPECT_EQ(data.eval->texts, (std::vector<std::string>{"line 0\n", "line 1\n"}));  // the first 10 %, kept breaks
  EXPECT_EQ(data.train.texts.size(), 18u);
  const fs::path csv = write("d.csv", "label,text\n1,\"a, quoted\ntext\"\n");
  const fs::path json = write("v.jsonl", "{\"body\": \"first field\", \"n\": 1}\n");
  args = parse_training_arguments({"--model_name_or_path", "m", "--output_dir", "out", "--train_file", csv.string(),
                                   "--validation_file", json.string(), "--do_train"});
  data = select_data(args);
  EXPECT_EQ(data.train.texts, (std::vector<std::string>{"a, quoted\ntext"}));
  ASSERT_TRUE(data.eval.has_value());
  EXPECT_EQ(data.eval->texts, (std::vector<std::string>{"first field"}));
}

// run_clm.py's command line as it is, on the shipped tiny model: txt files, a small block size,
// two steps, an evaluation at the end.
TEST_F(RunClmData, RunClmCommandTrainsAndEvaluates) {
  std::string train;
  std::string validation;
  for (int i = 0; i < 40; ++i) train += "the quick brown fox number " + std::to_string(i) + " jumps over the dog\n";
  for (int i = 0; i < 8; ++i) validation += "a lazy dog sleeps " + std::to_string(i) + " times in the sun\n";
  const fs::path train_file = write("train.txt", train);
  const fs::path validation_file = write("val.txt", validation);
  const testing::CliRun run = testing::run_zerotune(
      "train --model_name_or_path " + (fs::path(ZT_SOURCE_DIR) / "examples/tiny-qwen").string() + " --train_file " +
          train_file.string() + " --validation_file " + validation_file.string() +
          " --block_size 16 --do_train --do_eval --output_dir " + (dir_ / "out").string() +
          " --per_device_train_batch_size 4 --max_steps 2 --finetuning_type full --save_strategy no --device cpu",
      dir_);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("train.txt: 40 texts chained into"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("blocks of 16 tokens (run_clm.py's --block_size)"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("no template (run_clm.py's blocks), 2 steps"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("'eval_loss': "), std::string::npos) << run.output;
  EXPECT_TRUE(fs::exists(dir_ / "out" / "model.safetensors"));
}

}  // namespace
}  // namespace zt::train
