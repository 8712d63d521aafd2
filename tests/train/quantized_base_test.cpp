// QLoRA end to end through the CLI on the tiny model: `zerotune train --quantization_bit 4
// --finetuning_type lora` trains LoRA on a base quantized at load, saves a PEFT adapter laid out
// as the bf16 LoRA run's (same adapter_config.json, same tensors), and `zerotune export
// --merge_lora --quantization_bit 4` writes a dense model whose logits are the 4-bit base's with
// the adapter; a folder saved in 4 bits trains and merges the same way, and refuses full
// fine-tuning.
#include <gtest/gtest.h>

#include <filesystem>

#include "autograd/grad_mode.h"
#include "models/peft/lora_files.h"
#include "models/quant/quantized_checkpoint.h"
#include "models/quant/quantized_linears.h"
#include "models/weights/weights.h"
#include "tensor/safetensors/safetensors.h"
#include "tests/common/process_test_util.h"

namespace zt::train {
namespace {

namespace fs = std::filesystem;

const std::string kSource = ZT_SOURCE_DIR;
const std::string kTiny = kSource + "/examples/tiny-qwen";

std::string train_command(const std::string& model, const fs::path& out, const std::string& extra) {
  return "train --model_name_or_path " + model + " --train_file " + kSource +
         "/examples/data/alpaca_demo.json --template qwen --max_steps 4 --per_device_train_batch_size 2 "
         "--learning_rate 0.01 --logging_steps 1 --save_strategy no --device cpu --seed 3 --output_dir " +
         out.string() + " " + extra;
}

Tensor logits(const models::CausalLM& model) {
  autograd::NoGradGuard no_recording;
  return model
      .forward(Tensor::from_values({5, 17, 230, 41, 9, 300, 77, 12}, {8}, DType::kI64),
               Tensor::from_values({0, 1, 2, 3, 4, 0, 1, 2}, {8}, DType::kI64),
               Tensor::from_values({0, 5, 8}, {3}, DType::kI32))
      .data();
}

double max_difference(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to_vector(), y = b.to_vector();
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::fabs(x[i] - y[i]));
  return worst;
}

class QloraCli : public testing::FolderTest {};

TEST_F(QloraCli, TrainsSavesAPeftAdapterAndMerges) {
  const testing::CliRun qlora =
      testing::run_zerotune(train_command(kTiny, dir_ / "qlora", "--finetuning_type lora --quantization_bit 4"), dir_);
  ASSERT_EQ(qlora.exit_code, 0) << qlora.output;
  EXPECT_NE(qlora.output.find("4-bit base (nf4, double quantization, blocks of 64): 21 linear weights"),
            std::string::npos)
      << qlora.output;
  const testing::CliRun lora =
      testing::run_zerotune(train_command(kTiny, dir_ / "lora", "--finetuning_type lora"), dir_);
  ASSERT_EQ(lora.exit_code, 0) << lora.output;

  // The adapter loads onto the bf16 base as the plain LoRA run's does: same config, same tensors.
  EXPECT_EQ(models::read_json_file((dir_ / "qlora/adapter_config.json").string()),
            models::read_json_file((dir_ / "lora/adapter_config.json").string()));
  const SafetensorsFile a = SafetensorsFile::open((dir_ / "qlora/adapter_model.safetensors").string());
  const SafetensorsFile b = SafetensorsFile::open((dir_ / "lora/adapter_model.safetensors").string());
  ASSERT_EQ(a.names(), b.names());
  for (const std::string& name : a.names()) {
    EXPECT_EQ(a.info(name).shape, b.info(name).shape) << name;
    EXPECT_EQ(a.info(name).dtype, b.info(name).dtype) << name;
  }
  EXPECT_GT(max_difference(a.get(a.names().back()), b.get(b.names().back())), 0.0);  // trained on another base

  // The 4-bit base with the adapter, in memory.
  models::CausalLM quantized = models::load_model(kTiny);
  for (const auto& p : quantized.named_parameters()) p.variable.set_requires_grad(false);
  models::quant::quantize_linears(quantized, {.type = ops::quant4::Quant4Type::kNf4, .double_quant = true});
  models::load_lora_adapter(quantized, (dir_ / "qlora").string());
  const Tensor expected = logits(quantized);

  const testing::CliRun merged = testing::run_zerotune(
      "export --model_name_or_path " + kTiny + " --adapter_name_or_path " + (dir_ / "qlora").string() +
          " --merge_lora --quantization_bit 4 --output_dir " + (dir_ / "merged").string(),
      dir_);
  ASSERT_EQ(merged.exit_code, 0) << merged.output;
  EXPECT_LT(max_difference(logits(models::load_model((dir_ / "merged").string())), expected), 1e-4);
  // Merged into the base as it is (LLaMA-Factory's way), the logits move by the quantization error.
  const testing::CliRun plain =
      testing::run_zerotune("export --model_name_or_path " + kTiny + " --adapter_name_or_path " +
                                (dir_ / "qlora").string() + " --merge_lora --output_dir " + (dir_ / "plain").string(),
                            dir_);
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_GT(max_difference(logits(models::load_model((dir_ / "plain").string())), expected), 1e-3);
}

TEST_F(QloraCli, AFolderSavedInFourBitsTrainsAndMerges) {
  models::quant::save_bnb_4bit_model(models::load_model(kTiny), (dir_ / "bnb").string(), {});
  const testing::CliRun run =
      testing::run_zerotune(train_command((dir_ / "bnb").string(), dir_ / "adapter", "--finetuning_type lora"), dir_);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("4-bit base (the checkpoint's own): 21 linear weights"), std::string::npos) << run.output;

  models::CausalLM packed = models::load_model((dir_ / "bnb").string(), {.keep_4bit_weights = true});
  models::load_lora_adapter(packed, (dir_ / "adapter").string());
  const testing::CliRun merged = testing::run_zerotune("export --model_name_or_path " + (dir_ / "bnb").string() +
                                                           " --adapter_name_or_path " + (dir_ / "adapter").string() +
                                                           " --merge_lora --output_dir " + (dir_ / "merged").string(),
                                                       dir_);
  ASSERT_EQ(merged.exit_code, 0) << merged.output;
  EXPECT_FALSE(models::read_json_file((dir_ / "merged/config.json").string()).contains("quantization_config"));
  EXPECT_LT(max_difference(logits(models::load_model((dir_ / "merged").string())), logits(packed)), 1e-4);

  const testing::CliRun full =
      testing::run_zerotune(train_command((dir_ / "bnb").string(), dir_ / "full", "--finetuning_type full"), dir_);
  EXPECT_NE(full.exit_code, 0);
  EXPECT_NE(full.output.find("declares bitsandbytes 4-bit weights, which cannot be trained"), std::string::npos)
      << full.output;
}

}  // namespace
}  // namespace zt::train
