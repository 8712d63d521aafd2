#include "train/args/base_quantization.h"

#include "runtime/enum_names.h"

namespace zt::train {

bool asks_for_4bit(const TrainingArguments& args) {
  return args.quantization_bit == 4 || (!args.quantization_bit && args.load_in_4bit);
}

namespace {

// "torch.bfloat16", "bf16", "bfloat16" -> "bfloat16"; unknown names stay as written.
std::string dtype_named(std::string name) {
  if (name.starts_with("torch.")) name = name.substr(6);
  if (name == "bf16") return "bfloat16";
  if (name == "fp16" || name == "half") return "float16";
  if (name == "fp32" || name == "float") return "float32";
  return name;
}

}  // namespace

std::string training_dtype(const TrainingArguments& args) {
  if (args.bf16) return "bfloat16";
  if (args.fp16) return "float16";
  return "float32";
}

std::optional<BaseQuantization> base_quantization(const TrainingArguments& args) {
  if (!asks_for_4bit(args)) return std::nullopt;
  // LLaMA-Factory's defaults under quantization_bit, transformers' under load_in_4bit alone.
  const bool llama_factory = args.quantization_bit.has_value();
  BaseQuantization result;
  result.quant_type = !args.quantization_type.empty() ? args.quantization_type : llama_factory ? "nf4" : "fp4";
  result.double_quant = args.double_quantization.value_or(llama_factory);
  return result;
}

void check_base_quantization(const TrainingArguments& args, std::vector<std::string>& errors) {
  if (args.quantization_bit && *args.quantization_bit != 4)
    errors.push_back("--quantization_bit " + std::to_string(*args.quantization_bit) +
                     ": zerotune quantizes base weights to bitsandbytes' 4 bits (NF4 or FP4) only; use "
                     "--quantization_bit 4");
  if (args.load_in_8bit)
    errors.push_back(
        "--load_in_8bit: bitsandbytes' 8-bit weights (LLM.int8) are not supported; use --load_in_4bit (QLoRA)");
  if (args.quantization_bit && args.load_in_4bit && *args.quantization_bit != 4)
    errors.push_back("--load_in_4bit and --quantization_bit " + std::to_string(*args.quantization_bit) + " disagree");
  if (!asks_for_4bit(args)) {
    for (const char* flag : {"quantization_type", "double_quantization", "bnb_4bit_compute_dtype"})
      if (args.was_given(flag))
        errors.push_back(std::string("--") + flag +
                         " configures the 4-bit base, but none is asked for: add --quantization_bit 4 (or "
                         "--load_in_4bit)");
    return;
  }
  // LoRA and P-Tuning v2 leave the base frozen (ChatGLM's P-Tuning quantizes its base so too);
  // the other methods would train quantized weights.
  if (args.finetuning_type != FinetuningType::kLora && args.finetuning_type != FinetuningType::kPtuning)
    errors.push_back(std::string("--finetuning_type ") + name_of(args.finetuning_type) +
                     " with a 4-bit base: quantized weights cannot be trained (LLaMA-Factory and PEFT train LoRA "
                     "on them only): use --finetuning_type lora, or drop the quantization");
  const std::string compute = dtype_named(args.bnb_4bit_compute_dtype);
  if (!compute.empty() && compute != training_dtype(args))
    errors.push_back("--bnb_4bit_compute_dtype " + args.bnb_4bit_compute_dtype +
                     ": the 4-bit layers compute in the "
                     "training dtype, " +
                     training_dtype(args) + " here (--bf16 for bfloat16, --fp16 for float16)");
}

}  // namespace zt::train
