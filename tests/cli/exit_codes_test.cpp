// Every subcommand's exit codes, as README states them: 2 when the command line is refused
// (an unknown flag or command, a flag without its value or with a value of the wrong kind, a
// required flag missing, no prompt, flags that exclude or need each other, for train every
// problem with the arguments), 1 for every other error.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/common/process_test_util.h"

namespace zt {
namespace {

class ExitCodes : public testing::FolderTest {
 protected:
  // Runs `zerotune <arguments>` and expects `code`, printing the output when it differs.
  void expect_exit(const std::string& arguments, int code) {
    const testing::CliRun run = testing::run_zerotune(arguments, dir_);
    EXPECT_EQ(run.exit_code, code) << "zerotune " << arguments << "\n" << run.output;
    EXPECT_NE(run.output.find("error: "), std::string::npos) << "zerotune " << arguments << "\n" << run.output;
  }
  std::string absent_model() const { return (dir_ / "no_model").string(); }
};

struct Case {
  const char* command;
  const char* unknown_flag;   // the command line with an unknown flag
  const char* missing_value;  // a value flag given last, without its value
};

TEST_F(ExitCodes, AnUnknownFlagOrAMissingValueIsUsageInEveryCommand) {
  const std::vector<Case> cases = {
      {"train", "--no_such_flag 1", "--model_name_or_path m --output_dir o --learning_rate"},
      {"generate", "--model_name_or_path m --prompt hi --no_such_flag", "--prompt hi --model_name_or_path"},
      {"chat", "--model_name_or_path m --no_such_flag", "--model_name_or_path m --temperature"},
      {"evaluate", "--model_name_or_path m --validation_file v --no_such_flag", "--model_name_or_path m --max_length"},
      {"export", "--output_dir o --no_such_flag", "--model_name_or_path m --output_dir"},
      {"estimate", "--config c.json --num_gpus 1 --no_such_flag", "--config c.json --num_gpus"},
      {"tokenize", "--model_name_or_path m --no_such_flag", "--model_name_or_path"},
      {"launch", "--no_such_flag 1 zerotune env", "--nproc_per_node"},
      {"env", "--no_such_flag", nullptr},  // env has no flag that takes a value
  };
  for (const Case& c : cases) {
    expect_exit(std::string(c.command) + " " + c.unknown_flag, 2);
    if (c.missing_value) expect_exit(std::string(c.command) + " " + c.missing_value, 2);
  }
}

TEST_F(ExitCodes, AMissingRequiredFlagIsUsage) {
  for (const char* command :
       {"train --output_dir o --train_file t.json", "generate --prompt hi", "chat --temperature 1",
        "evaluate --model_name_or_path m", "export --merge_lora", "estimate --num_gpus 2", "tokenize --decode"})
    expect_exit(command, 2);
}

TEST_F(ExitCodes, AValueOfTheWrongKindIsUsage) {
  for (const char* command :
       {"train --model_name_or_path m --output_dir o --train_file t.json --max_steps many",
        "train --model_name_or_path m --output_dir o --train_file t.json --bf16 maybe",
        "generate --model_name_or_path m --prompt hi --temperature hot",
        "generate --model_name_or_path m --prompt hi --output_format xml",
        "chat --model_name_or_path m --max_new_tokens 1.5",
        "evaluate --model_name_or_path m --validation_file v "
        "--per_device_eval_batch_size 0",
        "estimate --config c.json --num_gpus two", "export --checkpoint c --output_dir o --weights both",
        "tokenize --model_name_or_path m --decode maybe", "launch --nproc_per_node two zerotune env",
        "generate --model_name_or_path m --prompt hi --dtype bf17"})
    expect_exit(command, 2);
}

TEST_F(ExitCodes, NoPromptAndAnUnknownCommandAreUsage) {
  expect_exit("generate --model_name_or_path m", 2);
  expect_exit("generate --model_name_or_path m --prompt hi --input_file p.jsonl", 2);
  expect_exit("launch --nproc_per_node 2", 2);  // no command to launch
  expect_exit("trian", 2);
}

// Usage found once the model's config or the disk is read is still usage: a flag's value the
// model cannot take, flags that need each other, an output folder the arguments must change.
TEST_F(ExitCodes, ArgumentsTheModelOrTheOutputFolderRefuseAreUsage) {
  const std::string model = std::string(ZT_SOURCE_DIR) + "/examples/tiny-qwen";
  const std::string generate = "generate --model_name_or_path " + model + " --prompt hi --device cpu ";
  for (const std::string flags :
       {"--do_sample --temperature 0", "--do_sample --top_p 2", "--max_new_tokens -3",
        "--min_new_tokens 5 --max_new_tokens 2", "--repetition_penalty 0", "--merge_lora", "--tp 5"})
    expect_exit(generate + flags, 2);
  const std::string train = "train --model_name_or_path " + model + " --train_file " + ZT_SOURCE_DIR +
                            "/examples/data/alpaca_demo.json --device cpu --max_steps 1 --output_dir ";
  expect_exit(train + (dir_ / "a").string() + " --lora_target q_prj", 2);
  expect_exit(train + (dir_ / "b").string() + " --finetuning_type freeze --freeze_trainable_layers 9", 2);
  expect_exit(train + model + " --overwrite_output_dir", 2);
  std::filesystem::create_directories(dir_ / "used");
  std::ofstream(dir_ / "used/notes.txt") << "mine";
  expect_exit(train + (dir_ / "used").string(), 2);
  expect_exit("estimate --config " + model + "/config.json --num_gpus 1 --finetuning_type lora --lora_target q_prj", 2);
  expect_exit("export --model_name_or_path " + model + " --output_dir " + (dir_ / "e").string() + " --dtype int32", 2);
}

// A DeepSpeed config is part of the arguments: what it says wrong is usage, in train and
// estimate; a config file that does not exist is an error like a missing data file.
TEST_F(ExitCodes, ADeepSpeedConfigsValuesAreUsage) {
  const std::string model = std::string(ZT_SOURCE_DIR) + "/examples/tiny-qwen";
  const std::string train = "train --model_name_or_path " + model + " --train_file " + ZT_SOURCE_DIR +
                            "/examples/data/alpaca_demo.json --device cpu --max_steps 1 --output_dir ";
  std::ofstream(dir_ / "stage5.json") << R"({"train_batch_size": "auto", "zero_optimization": {"stage": 5}})";
  std::ofstream(dir_ / "batch.json") << R"({"train_batch_size": "x"})";
  std::ofstream(dir_ / "type.json") << R"({"train_batch_size": "auto", "gradient_clipping": [1]})";
  std::ofstream(dir_ / "twice.json") << R"({"train_batch_size": "auto", "fp16": {}, "fp16": {}})";
  for (const char* config : {"stage5.json", "batch.json", "type.json", "twice.json"})
    expect_exit(train + (dir_ / "out").string() + " --deepspeed " + (dir_ / config).string(), 2);
  expect_exit("estimate --model_name_or_path " + model + " --deepspeed " + (dir_ / "stage5.json").string(), 2);
  expect_exit(train + (dir_ / "out").string() + " --deepspeed " + (dir_ / "absent.json").string(), 1);
}

TEST_F(ExitCodes, EveryOtherErrorIsOne) {
  const std::string model = absent_model();
  expect_exit("generate --model_name_or_path " + model + " --prompt hi --device cpu", 1);
  expect_exit("tokenize --model_name_or_path " + model, 1);
  expect_exit("estimate --config " + model + "/config.json --num_gpus 1 --gpu_memory 80", 1);
  expect_exit("train --model_name_or_path " + model + " --output_dir " + (dir_ / "out").string() + " --train_file " +
                  (dir_ / "absent.json").string() + " --device cpu",
              1);
}

}  // namespace
}  // namespace zt
