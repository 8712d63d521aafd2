// generate and chat on a 4-bit base kept 4-bit, as a user runs them (CPU): a folder saved in
// bitsandbytes' layout and the dense tiny model under --quantization_bit 4 give the greedy
// tokens of the same model dequantized to a dense folder, alone and with a LoRA adapter beside
// the 4-bit weights, FP4 without double quantization when asked; the log reports the linears
// held in fewer bytes than dense; under --tp a 4-bit folder is dequantized with a warning; what
// cannot take a 4-bit base is refused by name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <unistd.h>

#include "models/peft/lora.h"
#include "models/peft/lora_files.h"
#include "models/quant/quantized_checkpoint.h"
#include "models/quant/quantized_linears.h"
#include "models/weights/weights.h"
#include "ops/quant4/code_books.h"
#include "tests/common/process_test_util.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

const std::string kTiny = (fs::path(ZT_SOURCE_DIR) / "examples/tiny-qwen").string();

class FourBitGeneration : public ::testing::Test {
 protected:
  // Once per process: dir/bnb (the tiny model saved in 4 bits, NF4 with double quantization as
  // --quantization_bit 4 quantizes), dir/dense (those weights dequantized, saved dense) and
  // dir/adapter (a LoRA adapter with random B, so it changes the tokens).
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::path(ZT_BINARY_DIR) / ("four_bit_generation_test_" + std::to_string(getpid())));
    fs::remove_all(*dir_);
    fs::create_directories(*dir_);
    models::CausalLM fp4 = models::load_model(kTiny);
    models::quant::round_trip_linears(fp4, {.type = ops::quant4::Quant4Type::kFp4, .double_quant = false}, DType::kF32);
    models::save_model(fp4, (*dir_ / "dense_fp4").string());
    models::CausalLM model = models::load_model(kTiny);
    models::quant::save_bnb_4bit_model(model, (*dir_ / "bnb").string(), {});
    models::quant::round_trip_linears(model, {}, DType::kF32);
    models::save_model(model, (*dir_ / "dense").string());
    models::LoraConfig lora{
        .rank = 4, .alpha = 8.0, .target_modules = {"q_proj", "v_proj", "down_proj"}, .base_model_name_or_path = kTiny};
    models::attach_lora(model, lora, 7);
    std::uint64_t offset = 0;
    for (const models::NamedParameter& p : models::lora_parameters(model))
      if (p.name.find("lora_B") != std::string::npos) {
        Tensor b = p.variable.data();  // shares the parameter's storage
        b.copy_from(Tensor::normal(b.shape(), 11, offset++, 0.0, 0.5));
      }
    models::save_lora_adapter(model, lora, (*dir_ / "adapter").string());
  }
  static void TearDownTestSuite() {
    std::error_code ignored;
    fs::remove_all(*dir_, ignored);
    delete dir_;
  }

  static zt::testing::CliRun zerotune(const std::string& arguments) {
    return zt::testing::run_zerotune(arguments, *dir_);
  }
  // Greedy token ids of `zerotune generate` with `arguments` added.
  static std::string greedy_ids(const std::string& arguments) {
    const fs::path ids = *dir_ / "ids.txt";
    fs::remove(ids);
    const zt::testing::CliRun run = zerotune(
        "generate --device cpu --prompt 'a b c' --do_sample false --max_new_tokens 12 --min_new_tokens 12 "
        "--output_format ids --output_file " +
        ids.string() + arguments);
    EXPECT_EQ(run.exit_code, 0) << arguments << "\n" << run.output;
    return fs::exists(ids) ? zt::testing::read_text(ids) : "";
  }
  static std::string turns_file() {
    const fs::path turns = *dir_ / "turns.txt";
    std::ofstream(turns) << "hello\nwhat is two and two\n/exit\n";
    return turns.string();
  }
  static std::string model(const char* name) { return " --model_name_or_path " + (*dir_ / name).string(); }
  static std::string adapter() { return " --adapter_name_or_path " + (*dir_ / "adapter").string(); }

  // The answers of a chat of two turns, with the adapter.
  static std::vector<std::string> chat_answers(const std::string& model_arguments) {
    const zt::testing::CliRun chat = zt::testing::run_zerotune(
        "chat --device cpu --max_new_tokens 6 --min_new_tokens 6" + model_arguments + " < " + turns_file(), *dir_);
    EXPECT_EQ(chat.exit_code, 0) << chat.output;
    std::vector<std::string> answers = zt::testing::chat_answers(chat.output);
    EXPECT_EQ(answers.size(), 2u) << chat.output;
    return answers;
  }

  static fs::path* dir_;
};

fs::path* FourBitGeneration::dir_ = nullptr;

TEST_F(FourBitGeneration, GreedyTokensEqualTheDequantizedModelsWithAndWithoutAnAdapter) {
  const std::string dense = greedy_ids(model("dense"));
  EXPECT_EQ(greedy_ids(model("bnb")), dense);
  EXPECT_EQ(greedy_ids(" --model_name_or_path " + kTiny + " --quantization_bit 4"), dense);
  const std::string adapted = greedy_ids(model("dense") + adapter());
  EXPECT_NE(adapted, dense) << "the adapter changes nothing: the test would not see it ignored";
  EXPECT_EQ(greedy_ids(model("bnb") + adapter()), adapted);
  EXPECT_EQ(greedy_ids(" --model_name_or_path " + kTiny + " --quantization_bit 4" + adapter()), adapted);
}

// --quantization_type and --double_quantization reach the quantization: FP4 without double
// quantization gives the tokens of the model quantized so, not NF4's.
TEST_F(FourBitGeneration, TheQuantizationSettingsAreTheOnesGiven) {
  const std::string fp4 = greedy_ids(" --model_name_or_path " + kTiny +
                                     " --quantization_bit 4 --quantization_type fp4 --double_quantization false");
  EXPECT_EQ(fp4, greedy_ids(model("dense_fp4")));
  EXPECT_NE(fp4, greedy_ids(model("dense")));
}

TEST_F(FourBitGeneration, ChatOnTheFourBitBaseAnswersAsTheDequantizedModel) {
  const std::vector<std::string> adapted = chat_answers(model("bnb") + adapter());
  EXPECT_EQ(adapted, chat_answers(model("dense") + adapter()));
  EXPECT_NE(adapted, chat_answers(model("bnb"))) << "the adapter changed no answer";
}

TEST_F(FourBitGeneration, TheLinearsAreHeldInFewerBytesThanDense) {
  const zt::testing::CliRun run = zerotune("generate --device cpu --prompt hi --max_new_tokens 2" + model("bnb"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::smatch held;
  const std::string output = run.output;
  ASSERT_TRUE(std::regex_search(output, held,
                                std::regex("4-bit base: ([0-9]+) linear weights in ([0-9.]+) MiB instead of "
                                           "([0-9.]+) MiB, each layer dequantized while it computes")))
      << run.output;
  const models::ModelConfig config = models::load_config(kTiny);
  EXPECT_EQ(std::stoll(held[1]), 7 * config.num_layers);
  EXPECT_LT(std::stod(held[2]), std::stod(held[3]) / 4) << run.output;

  // The same loading in process: the linears' dense values are not held at all.
  models::CausalLM four_bit = models::load_model((*dir_ / "bnb").string(), {.keep_4bit_weights = true});
  const models::CausalLM dense = models::load_model((*dir_ / "dense").string());
  EXPECT_LT(models::quant::resident_weight_bytes(four_bit), models::quant::resident_weight_bytes(dense));
  EXPECT_EQ(four_bit.parameter("model.layers.0.mlp.down_proj.weight").data().numel(), 0);
}

// Tensor parallelism splits dense weights: a 4-bit folder is dequantized for it, and the log
// says so rather than doing it silently.
TEST_F(FourBitGeneration, UnderTensorParallelismAFourBitFolderIsDequantizedWithAWarning) {
  EXPECT_EQ(greedy_ids(model("bnb") + " --tp 2"), greedy_ids(model("dense")));
  const zt::testing::CliRun run =
      zerotune("generate --device cpu --prompt hi --max_new_tokens 2 --tp 2" + model("bnb"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("splits dense weights, so they are dequantized at load"), std::string::npos) << run.output;
}

TEST_F(FourBitGeneration, WhatCannotTakeAFourBitBaseIsRefusedByName) {
  const zt::testing::CliRun merged =
      zerotune("generate --device cpu --prompt hi --merge_lora" + model("bnb") + adapter());
  EXPECT_EQ(merged.exit_code, 2) << merged.output;
  EXPECT_NE(merged.output.find("--merge_lora with a 4-bit base"), std::string::npos) << merged.output;
  const zt::testing::CliRun split =
      zerotune("generate --device cpu --prompt hi --tp 2 --quantization_bit 4 --model_name_or_path " + kTiny);
  EXPECT_EQ(split.exit_code, 2) << split.output;
  EXPECT_NE(split.output.find("--quantization_bit 4 with --tp 2"), std::string::npos) << split.output;
  const zt::testing::CliRun settings =
      zerotune("generate --device cpu --prompt hi --quantization_type fp4 --model_name_or_path " + kTiny);
  EXPECT_EQ(settings.exit_code, 2) << settings.output;
  EXPECT_NE(settings.output.find("--quantization_type configures the 4-bit base"), std::string::npos)
      << settings.output;
  const zt::testing::CliRun eight = zerotune("generate --device cpu --prompt hi --quantization_bit 8" + model("dense"));
  EXPECT_EQ(eight.exit_code, 2) << eight.output;
  EXPECT_NE(eight.output.find("--quantization_bit"), std::string::npos) << eight.output;
}

}  // namespace
}  // namespace zt
