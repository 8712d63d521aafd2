#include "cli/four_bit_base.h"

#include "models/quant/quantized_linears.h"
#include "ops/quant4/blockwise.h"
#include "ops/quant4/code_books.h"
#include "runtime/log.h"
#include "runtime/usage_error.h"

namespace zt::cli {

Flag four_bit_flag(const std::string& name) {
  static const std::vector<Flag> declared = {
      {.name = "--quantization_bit",
       .kind = FlagKind::kChoice,
       .help = "run on a 4-bit base: the decoder's linear weights quantized to bitsandbytes' 4 bits as they load, "
               "each layer dequantized while it computes (a folder saved in 4 bits, \"-bnb-4bit\", is kept 4-bit "
               "without it); a LoRA adapter runs beside them; not with --merge_lora or --tp",
       .choices = {"4"}},
      {.name = "--quantization_type",
       .kind = FlagKind::kChoice,
       .help = "the 4-bit code",
       .default_value = "nf4",
       .choices = {"nf4", "fp4"}},
      {.name = "--double_quantization",
       .kind = FlagKind::kBool,
       .help = "quantize the block scales too",
       .default_value = "true"},
  };
  return flag_named(declared, name);
}

FlagGroup four_bit_flags() {
  return {"4-bit base (LLaMA-Factory's inference arguments)",
          {four_bit_flag("--quantization_bit"), four_bit_flag("--quantization_type"),
           four_bit_flag("--double_quantization")}};
}

namespace {

// --quantization_type and --double_quantization describe the base of --quantization_bit 4.
void check_settings_have_a_base(const Flags& flags) {
  for (const char* setting : {"--quantization_type", "--double_quantization"})
    ZT_REQUIRE_USAGE(flags.count("--quantization_bit") || !flags.count(setting),
                     std::string(setting) + " configures the 4-bit base of --quantization_bit 4: add that");
}

}  // namespace

void plan_four_bit_base(const Flags& flags, const models::ModelConfig& config, models::ModelOptions& options) {
  check_settings_have_a_base(flags);
  const bool asked = flags.count("--quantization_bit") > 0;
  if (!asked && !config.bnb_4bit) return;
  ZT_REQUIRE_USAGE(!flags.is_true("--merge_lora"),
                   "--merge_lora with a 4-bit base (" +
                       std::string(config.bnb_4bit ? config.source + " is saved in 4 bits" : "--quantization_bit 4") +
                       "): there is no dense weight to merge the LoRA update into. Drop --merge_lora to run the "
                       "adapter beside the 4-bit weights, or write a merged dense model with zerotune export "
                       "--merge_lora" +
                       (config.bnb_4bit ? " (which dequantizes the base)" : " --quantization_bit 4") +
                       " and generate from that");
  if (config.bnb_4bit) {
    options.keep_4bit_weights = true;
    if (asked)
      ZT_LOG(kInfo, config.source << " is saved in 4 bits: its own quantization is used; --quantization_bit and "
                                     "its settings do not quantize it again");
    return;
  }
  const std::string type = flags.text("--quantization_type");
  options.quantize_base =
      models::quant::Quant4Options{.type = ops::quant4::parse_quant4_type(type, "--quantization_type"),
                                   .double_quant = flags.is_true("--double_quantization"),
                                   .blocksize = ops::quant4::kDefaultBlocksize};
}

void check_four_bit_tensor_parallel(const Flags& flags, const models::ModelConfig& config) {
  check_settings_have_a_base(flags);
  ZT_REQUIRE_USAGE(!flags.count("--quantization_bit"),
                   "--quantization_bit 4 with --tp " + flags.at("--tp") +
                       ": tensor parallelism splits dense weights and does not take a 4-bit base; drop one of them");
  if (config.bnb_4bit)
    ZT_LOG(kWarn, config.source << " is saved in 4 bits; --tp " << flags.at("--tp")
                                << " splits dense weights, so they are dequantized at load (the whole model in "
                                   "the working dtype); run without --tp to keep them in 4 bits");
}

std::string four_bit_base_line(const models::CausalLM& model) {
  const std::string held = models::quant::held_in_4bit(model);
  return held.empty() ? "" : "4-bit base: " + held + ", each layer dequantized while it computes";
}

models::CausalLM load_model_maybe_four_bit(Flags& flags, Device device, DType dtype) {
  models::ModelOptions options{.device = device, .dtype = dtype};
  plan_four_bit_base(flags, models::load_config(flags.at("--model_name_or_path")), options);
  models::CausalLM model = load_model_from_flags(flags, options);
  if (const std::string held = four_bit_base_line(model); !held.empty()) ZT_LOG(kInfo, held);
  return model;
}

}  // namespace zt::cli
