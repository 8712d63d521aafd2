// ChatGLM's P-Tuning v2 main.py (ChatGLM-6B and ChatGLM2-6B's ptuning/train.sh): its
// DataTrainingArguments name the record keys (prompt_column, response_column, history_column)
// and cap the prompt and the answer (max_source_length, max_target_length); pre_seq_len alone
// chooses P-Tuning, and quantization_bit 4 freezes a 4-bit base under the prefix as ChatGLM's
// model.quantize(4) does. The script's command line, run as it ships, then its parts.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "tests/common/op_test_util.h"
#include "tests/common/training_arguments_test_util.h"
#include "train/args/base_quantization.h"
#include "train/args/dataset_selection.h"

namespace zt::train {
namespace {

namespace fs = std::filesystem;

// ptuning/train.sh, flag for flag (its paths are this test's).
std::vector<std::string> train_sh(const std::string& train_file) {
  return {"--do_train",
          "--train_file",
          train_file,
          "--validation_file",
          train_file,
          "--prompt_column",
          "content",
          "--response_column",
          "summary",
          "--overwrite_cache",
          "--model_name_or_path",
          "THUDM/chatglm2-6b",
          "--output_dir",
          "output/adgen-chatglm2-6b-pt-128-2e-2",
          "--overwrite_output_dir",
          "--max_source_length",
          "64",
          "--max_target_length",
          "128",
          "--per_device_train_batch_size",
          "1",
          "--per_device_eval_batch_size",
          "1",
          "--gradient_accumulation_steps",
          "16",
          "--predict_with_generate",
          "--max_steps",
          "3000",
          "--logging_steps",
          "10",
          "--save_steps",
          "1000",
          "--learning_rate",
          "2e-2",
          "--pre_seq_len",
          "128",
          "--quantization_bit",
          "4"};
}

fs::path advertise_gen() {
  const fs::path path = fs::temp_directory_path() / "zt_chatglm_adgen.json";
  std::ofstream(path)
      << R"({"content": "类型#裙*颜色#红色", "summary": "这款红色的裙子非常好看。"})"
      << "\n"
      << R"({"content": "类型#上衣*材质#牛仔布", "summary": "简约的牛仔外套。", "history": [["你好", "你好！"]]})"
      << "\n";
  return path;
}

TEST(ChatglmMainArguments, TrainShRunsAsPTuningOnAFourBitBase) {
  const TrainingArguments args = parse_training_arguments(train_sh(advertise_gen().string()));
  EXPECT_EQ(args.finetuning_type, FinetuningType::kPtuning);
  EXPECT_EQ(args.pre_seq_len, 128);
  EXPECT_TRUE(base_quantization(args).has_value());
  EXPECT_EQ(args.max_length, 64 + 128 + 1);  // main.py's max_seq_length
  EXPECT_NE(testing::joined(args.warnings).find("shared between prompt and answer"), std::string::npos)
      << testing::joined(args.warnings);
  // A 4-bit base under full or freeze training is still refused: those train the base.
  std::vector<std::string> full = train_sh(advertise_gen().string());
  full.insert(full.end(), {"--finetuning_type", "full"});
  EXPECT_NE(testing::error_of([&] { parse_training_arguments(full); }).find("--finetuning_type full with a 4-bit base"),
            std::string::npos);
}

// ds_train_finetune.sh: main.py's names without pre_seq_len are its full fine-tune;
// prefix_projection alone is P-Tuning.
TEST(ChatglmMainArguments, WithoutAPrefixItIsTheFullFineTune) {
  std::vector<std::string> flags = train_sh(advertise_gen().string());
  for (const char* prefix_or_4bit : {"--pre_seq_len", "--quantization_bit"}) {
    const auto at = std::find(flags.begin(), flags.end(), std::string(prefix_or_4bit));
    flags.erase(at, at + 2);
  }
  const TrainingArguments full = parse_training_arguments(flags);
  EXPECT_EQ(full.finetuning_type, FinetuningType::kFull);
  EXPECT_NE(full.method_implied_by.find("--prompt_column"), std::string::npos) << full.method_implied_by;
  EXPECT_EQ(testing::parse_minimal({"--prefix_projection"}).finetuning_type, FinetuningType::kPtuning);
}

TEST(ChatglmMainArguments, TheColumnsNameTheRecordsKeys) {
  std::vector<std::string> flags = train_sh(advertise_gen().string());
  const SelectedData data = select_data(parse_training_arguments(flags));
  ASSERT_EQ(data.train.samples.size(), 2u);
  const auto& first = data.train.samples[0].messages;
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].content, "类型#裙*颜色#红色");
  EXPECT_EQ(first[1].content, "这款红色的裙子非常好看。");
  // Unlisted, the history is not read; --history_column reads it as earlier turns.
  EXPECT_EQ(data.train.samples[1].messages.size(), 2u);
  flags.insert(flags.end(), {"--history_column", "history"});
  const SelectedData history_read = select_data(parse_training_arguments(flags));
  const auto& with_history = history_read.train.samples[1].messages;
  ASSERT_EQ(with_history.size(), 4u);
  EXPECT_EQ(with_history[0].content, "你好");
  EXPECT_EQ(with_history[1].content, "你好！");
  EXPECT_EQ(with_history[3].content, "简约的牛仔外套。");
}

TEST(ChatglmMainArguments, HalfAPairIsRefusedByName) {
  std::string msg = testing::error_of([] { testing::parse_minimal({"--prompt_column", "content"}); });
  EXPECT_NE(msg.find("--prompt_column and --response_column name the keys"), std::string::npos) << msg;
  // One cap alone takes main.py's default for the other (1024 source, 128 target).
  EXPECT_EQ(testing::parse_minimal({"--max_source_length", "64"}).max_length, 64 + 128 + 1);
  EXPECT_EQ(testing::parse_minimal({"--max_target_length", "64"}).max_length, 1024 + 64 + 1);
  msg = testing::error_of([] {
    testing::parse_minimal({"--prompt_column", "a", "--response_column", "b", "--stage", "dpo"});
  });
  EXPECT_NE(msg.find("--stage dpo reads preference pairs"), std::string::npos) << msg;
  msg = testing::error_of([] {
    testing::parse_minimal({"--prompt_column", "a", "--response_column", "b", "--dataset", "d", "--stage", "sft"});
  });
  EXPECT_NE(msg.find("a --dataset entry names its own"), std::string::npos) << msg;
  // --max_length given wins over the sum.
  EXPECT_EQ(testing::parse_minimal({"--max_source_length", "64", "--max_target_length", "64", "--max_length", "512"})
                .max_length,
            512);
}

}  // namespace
}  // namespace zt::train
