// The names LLaMA-Factory users (and trainers) bring to the other commands: where one means
// what a command's flag means it is taken as an alias; where it does not, the error names the
// command's own flag; a plain typo gets the nearest flag.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/common/process_test_util.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

const std::string kModel = (fs::path(ZT_SOURCE_DIR) / "examples/tiny-qwen").string();
const std::string kData = (fs::path(ZT_SOURCE_DIR) / "examples/data/alpaca_demo.json").string();

class LlamaFactoryNames : public testing::FolderTest {
 protected:
  testing::CliRun zerotune(const std::string& arguments) { return testing::run_zerotune(arguments, dir_); }
  static void expect_output(const testing::CliRun& run, int exit_code, const std::string& part) {
    EXPECT_EQ(run.exit_code, exit_code) << run.output;
    EXPECT_NE(run.output.find(part), std::string::npos) << run.output;
  }
};

TEST_F(LlamaFactoryNames, CutoffLenIsMaxLengthWhereACommandHasIt) {
  const std::string evaluate = "evaluate --device cpu --model_name_or_path " + kModel + " --validation_file " + kData;
  expect_output(zerotune(evaluate + " --cutoff_len 1"), 2, "--max_length must be at least 2");
  const std::string estimate = "estimate --config " + kModel + "/config.json --num_gpus 1 --gpu_memory 80";
  expect_output(zerotune(estimate + " --cutoff_len 64"), 0, "micro-batch 1 x 64 tokens");
}

TEST_F(LlamaFactoryNames, DefaultSystemIsChatsSystemPrompt) {
  std::ofstream(dir_ / "turns.txt") << "/exit\n";
  const testing::CliRun run = zerotune("chat --device cpu --model_name_or_path " + kModel +
                                       " --default_system \"Be brief.\" < " + (dir_ / "turns.txt").string());
  EXPECT_EQ(run.exit_code, 0) << run.output;
}

TEST_F(LlamaFactoryNames, OtherNamesPointToTheCommandsOwnFlag) {
  const std::string generate = "generate --model_name_or_path m --prompt hi";
  expect_output(zerotune("evaluate --model_name_or_path m --dataset alpaca_en_demo"), 2,
                "--dataset is LLaMA-Factory's name for datasets of dataset_info.json; zerotune evaluate takes "
                "--validation_file FILE");
  expect_output(zerotune("generate --model_name_or_path m --dataset alpaca_en_demo"), 2,
                "zerotune generate takes --input_file FILE");
  expect_output(zerotune(generate + " --infer_dtype bfloat16"), 2,
                "--infer_dtype is LLaMA-Factory's name; zerotune generate takes --dtype");
  expect_output(zerotune(generate + " --bf16"), 2,
                "--bf16 is a training flag; zerotune generate takes --dtype bfloat16");
  expect_output(zerotune(generate + " --max_length 64"), 2,
                "--max_length counts the prompt too in transformers' generate; zerotune generate takes "
                "--max_new_tokens");
  expect_output(zerotune("chat --model_name_or_path m --checkpoint_dir a"), 2,
                "--checkpoint_dir is older LLaMA-Factory's name for an adapter; zerotune chat takes "
                "--adapter_name_or_path");
}

TEST_F(LlamaFactoryNames, ATypoGetsTheNearestFlag) {
  expect_output(zerotune("chat --model_name_or_path m --temprature 0.7"), 2,
                "unknown option '--temprature' (did you mean --temperature?)");
  expect_output(zerotune("export --model_name_or_path m --output_dri o"), 2,
                "unknown option '--output_dri' (did you mean --output_dir?)");
  const testing::CliRun far = zerotune("estimate --config c.json --num_gpus 1 --stage 2");
  expect_output(far, 2, "unknown option '--stage'; see `zerotune estimate --help`");
}

}  // namespace
}  // namespace zt
