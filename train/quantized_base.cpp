#include "train/quantized_base.h"

#include "models/quant/quantized_linears.h"
#include "ops/quant4/blockwise.h"
#include "runtime/enum_names.h"
#include "runtime/error.h"
#include "train/args/base_quantization.h"

namespace zt::train {
namespace {

std::string held_line(const models::CausalLM& model, const std::string& how) {
  const std::string held = models::quant::held_in_4bit(model);
  if (held.empty()) return "";
  return "4-bit base (" + how + "): " + held + ", each layer dequantized while it computes; in backward " +
         (model.options().gradient_checkpointing
              ? "each layer is recomputed (gradient checkpointing; --disable_gradient_checkpointing keeps the "
                "activations instead, where memory allows)"
              : "each weight is dequantized again, the activations kept");
}

// PEFT's prepare_model_for_kbit_training, the QLoRA recipe, turns gradient checkpointing on (as
// LLaMA-Factory does for every model): a 4-bit base recomputes its layers unless the arguments
// turn that off by name.
bool recomputes_4bit_layers(const TrainingArguments& args) {
  if (args.disable_gradient_checkpointing) return false;
  return args.gradient_checkpointing || !args.was_given("gradient_checkpointing");
}

models::quant::Quant4Options quant4_options(const BaseQuantization& asked) {
  return {.type = ops::quant4::parse_quant4_type(asked.quant_type, "--quantization_type"),
          .double_quant = asked.double_quant,
          .blocksize = ops::quant4::kDefaultBlocksize};
}

}  // namespace

void plan_4bit_loading(models::ModelOptions& options, const models::ModelConfig& config,
                       const TrainingArguments& args) {
  if (config.bnb_4bit) {
    ZT_REQUIRE(args.finetuning_type == FinetuningType::kLora || args.finetuning_type == FinetuningType::kPtuning,
               config.source +
                   " declares bitsandbytes 4-bit weights, which cannot be trained: train LoRA on them "
                   "(--finetuning_type lora), or use the unquantized model for --finetuning_type " +
                   std::string(name_of(args.finetuning_type)) +
                   (args.method_implied_by.empty() ? "" : " (implied by " + args.method_implied_by + ")"));
    options.keep_4bit_weights = true;
  } else if (const std::optional<BaseQuantization> asked = base_quantization(args)) {
    options.quantize_base = quant4_options(*asked);
  } else {
    return;
  }
  options.gradient_checkpointing = recomputes_4bit_layers(args);
}

std::string quantize_base(models::CausalLM& model, const TrainingArguments& args, int zero_stage) {
  const std::optional<BaseQuantization> asked = base_quantization(args);
  if (!asked && !model.config().bnb_4bit) return "";
  ZT_REQUIRE(zero_stage != 3,
             "a 4-bit base and ZeRO stage 3 both partition the base weights: use ZeRO stage 0, 1 or 2 (LoRA's "
             "optimizer state is small), or drop the quantization");
  if (model.config().bnb_4bit) {
    std::string how = "the checkpoint's own";
    if (asked) how += "; the quantization arguments do not re-quantize it";
    return held_line(model, how);
  }
  // Quantized as it loaded (plan_4bit_loading); a model loaded dense is quantized now.
  if (model.owned_parameter_gatherer() == nullptr) models::quant::quantize_linears(model, quant4_options(*asked), {});
  return held_line(model, asked->quant_type + (asked->double_quant ? ", double quantization" : "") + ", blocks of 64");
}

}  // namespace zt::train
