// The LoRA arguments of the training scripts users run through HfArgumentParser: FastChat's
// train_lora.py and Qwen's finetune.py share LoraArguments (lora_r, lora_alpha, lora_dropout,
// lora_target_modules, lora_weight_path, lora_bias, q_lora); Qwen's adds use_lora. Their command
// lines as the scripts ship them, with their own LoRA defaults where a name is left out.
#include <gtest/gtest.h>

#include "tests/common/training_arguments_test_util.h"
#include "train/args/base_quantization.h"

namespace zt::train {
namespace {

using testing::error_of;
using testing::parse_minimal;

// FastChat's scripts/train_lora.sh, flag for flag (model, data and config paths aside).
const std::vector<std::string> kFastChatTrainLora = {"--lora_r",
                                                     "8",
                                                     "--lora_alpha",
                                                     "16",
                                                     "--lora_dropout",
                                                     "0.05",
                                                     "--num_train_epochs",
                                                     "150",
                                                     "--fp16",
                                                     "True",
                                                     "--per_device_train_batch_size",
                                                     "2",
                                                     "--per_device_eval_batch_size",
                                                     "2",
                                                     "--gradient_accumulation_steps",
                                                     "1",
                                                     "--evaluation_strategy",
                                                     "steps",
                                                     "--eval_steps",
                                                     "100",
                                                     "--eval_data_path",
                                                     "eval.json",
                                                     "--save_strategy",
                                                     "steps",
                                                     "--save_steps",
                                                     "200",
                                                     "--save_total_limit",
                                                     "2",
                                                     "--learning_rate",
                                                     "2e-5",
                                                     "--weight_decay",
                                                     "0.",
                                                     "--warmup_ratio",
                                                     "0.03",
                                                     "--lr_scheduler_type",
                                                     "cosine",
                                                     "--logging_strategy",
                                                     "steps",
                                                     "--logging_steps",
                                                     "1",
                                                     "--tf32",
                                                     "True",
                                                     "--model_max_length",
                                                     "2048",
                                                     "--q_lora",
                                                     "False",
                                                     "--gradient_checkpointing",
                                                     "True",
                                                     "--lora_weight_path",
                                                     "./lora_weights",
                                                     "--flash_attn",
                                                     "False"};

// Qwen2.5's examples/sft/finetune.sh: the flags after which it passes --use_lora and --q_lora.
std::vector<std::string> qwen_finetune(const std::string& use_lora, const std::string& q_lora) {
  return {"--bf16",
          "True",
          "--num_train_epochs",
          "5",
          "--per_device_train_batch_size",
          "2",
          "--per_device_eval_batch_size",
          "1",
          "--gradient_accumulation_steps",
          "8",
          "--evaluation_strategy",
          "no",
          "--save_strategy",
          "steps",
          "--save_steps",
          "10",
          "--save_total_limit",
          "10",
          "--learning_rate",
          "3e-4",
          "--weight_decay",
          "0.01",
          "--adam_beta2",
          "0.95",
          "--warmup_ratio",
          "0.01",
          "--lr_scheduler_type",
          "cosine",
          "--logging_steps",
          "1",
          "--report_to",
          "none",
          "--model_max_length",
          "512",
          "--lazy_preprocess",
          "True",
          "--use_lora",
          use_lora,
          "--q_lora",
          q_lora,
          "--gradient_checkpointing"};
}

TEST(TrainingScriptLora, FastChatTrainLoraKeepsItsDefaults) {
  const TrainingArguments args = parse_minimal(kFastChatTrainLora);
  EXPECT_EQ(args.finetuning_type, FinetuningType::kLora);
  EXPECT_EQ(args.lora_rank, 8);
  EXPECT_EQ(args.lora_alpha, std::optional<double>(16));
  EXPECT_EQ(args.lora_dropout, 0.05);
  EXPECT_EQ(args.lora_target, "q_proj,v_proj");  // train_lora.py's lora_target_modules default
  EXPECT_FALSE(base_quantization(args).has_value());
  EXPECT_EQ(args.max_length, 2048);
  // train_lora.py never reads lora_weight_path; flash_attn False is its default.
  ASSERT_EQ(args.warnings.size(), 1u) << testing::joined(args.warnings);
  EXPECT_NE(args.warnings[0].find("--lora_weight_path has no effect in zerotune: FastChat's train_lora.py and "
                                  "Qwen's finetune.py declare it but never read it"),
            std::string::npos)
      << args.warnings[0];
}

// flash_attn is LLaMA-Factory's and these scripts' alike: its warning names neither.
TEST(TrainingScriptLora, FlashAttnIsWarnedAboutAsNoOnesInParticular) {
  for (const char* value : {"True", "fa2"}) {
    const TrainingArguments args = parse_minimal({"--flash_attn", value});
    ASSERT_EQ(args.warnings.size(), 1u) << testing::joined(args.warnings);
    EXPECT_EQ(args.warnings[0],
              "--flash_attn has no effect in zerotune: zerotune picks its attention kernels with "
              "--attn_impl (zerotune, cudnn)");
  }
  for (const char* value : {"False", "false", "auto"})
    EXPECT_TRUE(parse_minimal({"--flash_attn", value}).warnings.empty());
}

TEST(TrainingScriptLora, TargetModulesAsWordsOrAFileList) {
  EXPECT_EQ(parse_minimal({"--lora_r", "16", "--lora_target_modules", "q_proj", "k_proj", "v_proj"}).lora_target,
            "q_proj,k_proj,v_proj");
  const TrainingArguments args = testing::yaml(
      "model_name_or_path: m\noutput_dir: o\ndata_path: d.json\nlora_r: 16\nlora_target_modules: [q_proj, o_proj]\n");
  EXPECT_EQ(args.lora_rank, 16);
  EXPECT_EQ(args.lora_target, "q_proj,o_proj");
  EXPECT_EQ(args.lora_dropout, 0.05);
}

TEST(TrainingScriptLora, QLoraIsNf4WithDoubleQuantization) {
  std::vector<std::string> flags = kFastChatTrainLora;
  flags.insert(flags.end(), {"--q_lora", "True"});
  const std::optional<BaseQuantization> base = base_quantization(parse_minimal(flags));
  ASSERT_TRUE(base.has_value());
  EXPECT_EQ(base->quant_type, "nf4");
  EXPECT_TRUE(base->double_quant);
}

TEST(TrainingScriptLora, QwenUseLoraChoosesTheMethodWithItsDefaults) {
  const TrainingArguments lora = parse_minimal(qwen_finetune("True", "False"));
  EXPECT_EQ(lora.finetuning_type, FinetuningType::kLora);
  EXPECT_EQ(lora.lora_rank, 64);
  EXPECT_EQ(lora.lora_alpha, std::optional<double>(16));
  EXPECT_EQ(lora.lora_dropout, 0.05);
  EXPECT_EQ(lora.lora_target, "q_proj,k_proj,v_proj,o_proj,up_proj,gate_proj,down_proj");
  EXPECT_EQ(parse_minimal(qwen_finetune("False", "False")).finetuning_type, FinetuningType::kFull);
  EXPECT_TRUE(base_quantization(parse_minimal(qwen_finetune("True", "True"))).has_value());
}

TEST(TrainingScriptLora, RefusedWhatTheyCannotMean) {
  std::string msg = error_of([] { parse_minimal({"--use_lora", "--finetuning_type", "full"}); });
  EXPECT_NE(msg.find("--use_lora true and --finetuning_type full disagree"), std::string::npos) << msg;
  msg = error_of([] { parse_minimal({"--lora_r", "8", "--lora_bias", "all"}); });
  EXPECT_NE(msg.find("--lora_bias all is not supported"), std::string::npos) << msg;
  // Qwen's finetune.py quantizes only under use_lora; a 4-bit base cannot train every weight.
  msg = error_of([] { parse_minimal(qwen_finetune("False", "True")); });
  EXPECT_NE(msg.find("--finetuning_type full with a 4-bit base"), std::string::npos) << msg;
}

// stanford_alpaca's and FastChat's train.py train every weight: their commands (data_path,
// model_max_length, lazy_preprocess, no LoRA name) are full fine-tunes, and the run line says
// why. ChatGLM's P-Tuning main.py names pre_seq_len alone. A method or a LoRA name given keeps
// LoRA (or the given method); LLaMA-Factory's files keep its LoRA default.
TEST(TrainingScriptLora, TheTrainingScriptsWithoutLoraNamesTrainEveryWeight) {
  for (const char* script_name : {"--model_max_length", "--lazy_preprocess"}) {
    const TrainingArguments args =
        parse_minimal({script_name, std::string(script_name) == "--lazy_preprocess" ? "True" : "512"});
    EXPECT_EQ(args.finetuning_type, FinetuningType::kFull) << script_name;
    EXPECT_NE(args.method_implied_by.find(std::string(script_name)), std::string::npos) << args.method_implied_by;
  }
  const TrainingArguments alpaca =
      train::parse_training_arguments({"--model_name_or_path", "m", "--output_dir", "o", "--data_path", "d.json"});
  EXPECT_EQ(alpaca.finetuning_type, FinetuningType::kFull);
  const TrainingArguments ptuning = parse_minimal({"--pre_seq_len", "8"});
  EXPECT_EQ(ptuning.finetuning_type, FinetuningType::kPtuning);
  EXPECT_NE(ptuning.method_implied_by.find("--pre_seq_len"), std::string::npos) << ptuning.method_implied_by;

  EXPECT_EQ(parse_minimal(kFastChatTrainLora).finetuning_type, FinetuningType::kLora);
  EXPECT_EQ(parse_minimal({"--model_max_length", "512", "--lora_rank", "4"}).finetuning_type, FinetuningType::kLora);
  const TrainingArguments named = parse_minimal({"--model_max_length", "512", "--finetuning_type", "lora"});
  EXPECT_EQ(named.finetuning_type, FinetuningType::kLora);
  EXPECT_TRUE(named.method_implied_by.empty());
  EXPECT_EQ(parse_minimal({}).finetuning_type, FinetuningType::kLora);
  // A 4-bit base can only mean LoRA: the scripts' names do not make it a full fine-tune.
  for (const char* four_bit : {"--quantization_bit", "--load_in_4bit"}) {
    std::vector<std::string> flags = {"--model_max_length", "512", four_bit};
    if (std::string(four_bit) == "--quantization_bit") flags.push_back("4");
    EXPECT_EQ(parse_minimal(flags).finetuning_type, FinetuningType::kLora) << four_bit;
  }
  EXPECT_EQ(testing::yaml("model_name_or_path: m\noutput_dir: o\nstage: sft\ndataset: d\nmodel_max_length: 512\n")
                .finetuning_type,
            FinetuningType::kLora);
}

TEST(TrainingScriptLora, ZerotuneDefaultsWithoutTheirNames) {
  const TrainingArguments args = parse_minimal({"--lora_rank", "4"});
  EXPECT_EQ(args.lora_target, "all");
  EXPECT_EQ(args.lora_dropout, 0.0);
  EXPECT_EQ(args.lora_alpha, std::nullopt);
}

}  // namespace
}  // namespace zt::train
