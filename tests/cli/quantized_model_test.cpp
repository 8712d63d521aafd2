// A model folder whose config.json declares quantized weights is refused by every command that
// loads a model, naming the method, before any weight is read: the shipped tiny model with a
// quantization_config added (its weights stay unquantized, so a command that ignored the
// declaration would run, and one that read the weights first would not name the method).
// bitsandbytes 4-bit is the exception: a folder in its layout runs, and one that only claims it
// is refused saying so.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "models/quant/quantized_checkpoint.h"
#include "models/weights/weights.h"
#include "tests/common/process_test_util.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

const fs::path kTinyModel = fs::path(ZT_SOURCE_DIR) / "examples/tiny-qwen";
const std::string kData = (fs::path(ZT_SOURCE_DIR) / "examples/data/alpaca_demo.json").string();

class QuantizedModel : public testing::FolderTest {
 protected:
  // dir_/model: the tiny model with `quantization` as its config.json's quantization_config.
  std::string quantized_model(const char* quantization) {
    const fs::path model = dir_ / "model";
    fs::create_directories(model);
    for (const auto& entry : fs::directory_iterator(kTinyModel))
      fs::copy(entry.path(), model / entry.path().filename(), fs::copy_options::overwrite_existing);
    nlohmann::ordered_json config = nlohmann::ordered_json::parse(testing::read_text(kTinyModel / "config.json"));
    config["quantization_config"] = nlohmann::ordered_json::parse(quantization);
    std::ofstream(model / "config.json") << config.dump(2);
    return model.string();
  }

  void expect_refused(const std::string& arguments, const std::string& method, const std::string& environment = "") {
    const testing::CliRun run = testing::run_zerotune(arguments, dir_, environment);
    EXPECT_EQ(run.exit_code, 1) << arguments << "\n" << run.output;
    EXPECT_NE(run.output.find("config.json: the model's weights are quantized with " + method), std::string::npos)
        << arguments << "\n"
        << run.output;
    EXPECT_EQ(run.output.find("mismatch"), std::string::npos) << run.output;
  }
};

TEST_F(QuantizedModel, EveryCommandThatLoadsTheModelRefusesIt) {
  const std::string model = quantized_model(R"({"bits": 4, "group_size": 128, "quant_method": "gptq"})");
  const std::string gptq = "GPTQ 4-bit (quantization_config.quant_method 'gptq')";
  expect_refused("train --device cpu --model_name_or_path " + model + " --train_file " + kData + " --output_dir " +
                     (dir_ / "out").string() + " --max_steps 1",
                 gptq);
  EXPECT_FALSE(fs::exists(dir_ / "out" / "train_log.jsonl"));
  expect_refused("generate --device cpu --model_name_or_path " + model + " --prompt hi", gptq);
  expect_refused("chat --device cpu --model_name_or_path " + model + " < /dev/null", gptq);
  expect_refused("export --model_name_or_path " + model + " --output_dir " + (dir_ / "exported").string(), gptq);
  expect_refused("estimate --model_name_or_path " + model + " --num_gpus 1 --gpu_memory 80", gptq);
  expect_refused("estimate --config " + model + "/config.json --num_gpus 1 --gpu_memory 80", gptq);
  // Refused before it listens; `timeout` ends a server that wrongly started.
  expect_refused("serve --device cpu --port 0 --model_name_or_path " + model, gptq, "timeout 120");
}

TEST_F(QuantizedModel, EachMethodIsNamed) {
  const std::pair<const char*, const char*> methods[] = {
      {R"({"bits": 4, "group_size": 128, "quant_method": "awq", "version": "gemm", "zero_point": true})", "AWQ 4-bit"},
      {R"({"load_in_8bit": true, "quant_method": "bitsandbytes"})", "bitsandbytes 8-bit"},
      {R"({"activation_scheme": "dynamic", "quant_method": "fp8", "weight_block_size": [128, 128]})", "FP8"},
      {R"({"quant_method": "eetq", "weights": "int8"})", "EETQ"},
      {R"({"quant_method": "hqq"})", "HQQ"},
      {R"({"quant_method": "compressed-tensors", "format": "pack-quantized"})", "compressed-tensors"}};
  for (const auto& [quantization, method] : methods) {
    const std::string model = quantized_model(quantization);
    expect_refused("generate --device cpu --model_name_or_path " + model + " --prompt hi", method);
  }
}

TEST_F(QuantizedModel, BitsandbytesFourBitRunsAndAClaimOfItIsRefused) {
  const fs::path four_bit = dir_ / "bnb";
  models::quant::save_bnb_4bit_model(models::load_model(kTinyModel.string()), four_bit.string(), {});
  const testing::CliRun run = testing::run_zerotune(
      "generate --device cpu --model_name_or_path " + four_bit.string() + " --prompt hi --max_new_tokens 4", dir_);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  const std::string claimed =
      quantized_model(R"({"load_in_4bit": true, "bnb_4bit_quant_type": "nf4", "quant_method": "bitsandbytes"})");
  const testing::CliRun refused =
      testing::run_zerotune("generate --device cpu --model_name_or_path " + claimed + " --prompt hi", dir_);
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_NE(refused.output.find("declares bitsandbytes 4-bit weights (quantization_config), but no weight"),
            std::string::npos)
      << refused.output;
}

}  // namespace
}  // namespace zt
