// QLoRA's arguments: LLaMA-Factory's quantization_* and transformers' BitsAndBytesConfig names
// in a file or on the command line, each front end's defaults, and the combinations refused as
// LLaMA-Factory and PEFT refuse them.
#include <gtest/gtest.h>

#include "models/config/config.h"
#include "tests/common/op_test_util.h"
#include "train/args/base_quantization.h"
#include "train/args/training_arguments.h"
#include "train/quantized_base.h"

namespace zt::train {
namespace {

constexpr const char* kBase = "model_name_or_path: m\noutput_dir: o\ntrain_file: d.json\n";

TrainingArguments yaml(const std::string& text) {
  return parse_training_arguments_text(std::string(kBase) + text, ArgumentsFileFormat::kYaml, "args.yaml", {});
}
std::string yaml_error(const std::string& text) {
  return testing::error_of([&] { yaml(text); });
}

// The base that `file` asks for is quantized to `quant_type`, with double quantization or not.
void expect_quantized_as(const std::string& file, const std::string& quant_type, bool double_quant) {
  const std::optional<BaseQuantization> q = base_quantization(yaml(file));
  ASSERT_TRUE(q.has_value()) << file;
  EXPECT_EQ(q->quant_type, quant_type) << file;
  EXPECT_EQ(q->double_quant, double_quant) << file;
}

TEST(BaseQuantization, LlamaFactoryNamesAndDefaults) {
  EXPECT_FALSE(base_quantization(yaml("")).has_value());
  expect_quantized_as("quantization_bit: 4\n", "nf4", true);
  expect_quantized_as(
      "quantization_bit: 4\nquantization_method: bitsandbytes\nquantization_type: fp4\ndouble_quantization: false\n",
      "fp4", false);
  EXPECT_TRUE(yaml("quantization_bit: 4\n").warnings.empty());  // honoured, not "without effect"
}

TEST(BaseQuantization, TransformersNamesAndDefaults) {
  expect_quantized_as("load_in_4bit: true\n", "fp4", false);  // BitsAndBytesConfig's defaults
  expect_quantized_as(
      "load_in_4bit: true\nbnb_4bit_quant_type: nf4\nbnb_4bit_use_double_quant: true\n"
      "bnb_4bit_compute_dtype: bfloat16\nbf16: true\nbnb_4bit_quant_storage: bfloat16\n",
      "nf4", true);
  const TrainingArguments flags =
      parse_training_arguments({"--model_name_or_path", "m", "--output_dir", "o", "--train_file", "d.json",
                                "--quantization_bit", "4", "--bnb_4bit_quant_type", "fp4"});
  EXPECT_EQ(base_quantization(flags)->quant_type, "fp4");
}

TEST(BaseQuantization, RefusalsSayWhatToDo) {
  testing::expect_mentions(yaml_error("quantization_bit: 8\n"),
                           {"--quantization_bit 8", "4 bits (NF4 or FP4) only", "use --quantization_bit 4"});
  testing::expect_mentions(yaml_error("load_in_8bit: true\n"), {"--load_in_8bit", "LLM.int8", "--load_in_4bit"});
  testing::expect_mentions(yaml_error("quantization_bit: 4\nfinetuning_type: full\n"),
                           {"--finetuning_type full with a 4-bit base", "use --finetuning_type lora"});
  testing::expect_mentions(yaml_error("quantization_bit: 4\nfinetuning_type: freeze\n"),
                           {"--finetuning_type freeze with a 4-bit base"});
  testing::expect_mentions(yaml_error("quantization_type: fp4\n"),
                           {"--quantization_type configures the 4-bit base, but none is asked for"});
  testing::expect_mentions(yaml_error("quantization_bit: 4\nbnb_4bit_compute_dtype: float16\nbf16: true\n"),
                           {"--bnb_4bit_compute_dtype float16", "bfloat16 here"});
  testing::expect_mentions(yaml_error("quantization_bit: 4\nquantization_method: hqq\n"), {"quantization_method"});
  testing::expect_mentions(yaml_error("quantization_bit: 4\nquantization_type: int4\n"), {"quantization_type"});
}

// A 4-bit base recomputes its layers unless gradient checkpointing is turned off by name (PEFT's
// QLoRA recipe turns it on); a dense base keeps what the arguments say.
TEST(BaseQuantization, AFourBitBaseRecomputesUnlessToldNotTo) {
  const models::ModelConfig config = models::load_config(std::string(ZT_SOURCE_DIR) + "/examples/tiny-qwen");
  auto recomputes = [&](const std::string& file) {
    const TrainingArguments args = yaml(file);
    models::ModelOptions options;
    options.gradient_checkpointing = args.gradient_checkpointing;
    plan_4bit_loading(options, config, args);
    return options.gradient_checkpointing;
  };
  EXPECT_TRUE(recomputes("quantization_bit: 4\nfinetuning_type: lora\n"));
  EXPECT_TRUE(recomputes("load_in_4bit: true\nfinetuning_type: lora\ngradient_checkpointing: true\n"));
  EXPECT_FALSE(recomputes("quantization_bit: 4\nfinetuning_type: lora\ndisable_gradient_checkpointing: true\n"));
  EXPECT_FALSE(recomputes("load_in_4bit: true\nfinetuning_type: lora\ngradient_checkpointing: false\n"));
  EXPECT_FALSE(recomputes("finetuning_type: lora\n")) << "a dense base follows the arguments";
}

}  // namespace
}  // namespace zt::train
