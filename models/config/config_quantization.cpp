// A config.json that declares its weights quantized (quantization_config, as transformers'
// quantizers write it; compression_config in older compressed-tensors files; quantization_bit
// in THUDM's ChatGLM files). bitsandbytes' 4-bit layout (QLoRA's "-bnb-4bit" checkpoints)
// loads through models/quant/; every other method's tensors are packed integers, scales and
// zero points zerotune does not read, so the model is refused here, naming the method, before
// any weight is read.
#include <cstdint>
#include <optional>
#include <string>

#include "models/config/config_parsers.h"

namespace zt::models::detail {
namespace {

struct MethodName {
  const char* quant_method;  // as transformers' QuantizationMethod spells it
  const char* shown;
};
constexpr MethodName kMethods[] = {
    {"gptq", "GPTQ"},
    {"awq", "AWQ"},
    {"bitsandbytes", "bitsandbytes"},
    {"fp8", "FP8"},
    {"fbgemm_fp8", "FBGEMM FP8"},
    {"eetq", "EETQ"},
    {"hqq", "HQQ"},
    {"compressed-tensors", "compressed-tensors"},
    {"aqlm", "AQLM"},
    {"vptq", "VPTQ"},
    {"quanto", "Quanto"},
    {"torchao", "torchao"},
    {"bitnet", "BitNet"},
    {"spqr", "SpQR"},
    {"higgs", "HIGGS"},
    {"quark", "Quark"},
    {"fp_quant", "FP-Quant"},
    {"auto-round", "AutoRound"},
    {"mxfp4", "MXFP4"},
};

std::string shown_name(const std::string& method) {
  for (const auto& [name, shown] : kMethods)
    if (method == name) return shown;
  return method;
}

// The method with its width where the config says it: "GPTQ 4-bit", "bitsandbytes 4-bit nf4".
// Read leniently: a key of an unexpected type leaves the detail out rather than hiding the refusal.
std::string described(const nlohmann::ordered_json& quantization, const std::string& method) {
  const auto at = [&](const char* key) {
    const auto found = quantization.find(key);
    return found == quantization.end() ? nlohmann::ordered_json() : *found;
  };
  std::string text = shown_name(method);
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on " " + a temporary string.
  if (at("load_in_4bit") == true) {
    const nlohmann::ordered_json type = at("bnb_4bit_quant_type");
    text += " 4-bit";
    if (type.is_string()) text.append(" ").append(type.get<std::string>());
    return text;
  }
  if (at("load_in_8bit") == true) return text.append(" 8-bit");
  if (at("bits").is_number_integer())
    text.append(" ").append(std::to_string(at("bits").get<std::int64_t>())).append("-bit");
  return text;
}

struct Quantization {
  const char* key;     // the config.json key that declares it
  std::string method;  // its quant_method; empty when it names none
};

std::optional<Quantization> declared_quantization(const ConfigKeys& keys) {
  for (const char* key : {"quantization_config", "compression_config"}) {
    const nlohmann::ordered_json* config = keys.object(key);
    if (!config) continue;
    const ConfigKeys quantization(*config, keys.source() + " " + key);
    if (quantization.has("quant_method")) return Quantization{key, quantization.string("quant_method", "")};
    // bitsandbytes configs saved before transformers wrote quant_method name only the width.
    if (quantization.boolean("load_in_4bit", false) || quantization.boolean("load_in_8bit", false))
      return Quantization{key, "bitsandbytes"};
    return Quantization{key, ""};
  }
  return std::nullopt;
}

// bitsandbytes 4-bit: the packed weights carry their own quant states; the config says which
// modules were left dense.
void read_bnb_4bit(const ConfigKeys& keys, const char* key, ModelConfig& config) {
  const ConfigKeys quantization(*keys.object(key), keys.source() + " " + key);
  config.bnb_4bit = true;
  const nlohmann::ordered_json* skip = nullptr;
  const auto& object = *keys.object(key);
  if (const auto found = object.find("llm_int8_skip_modules"); found != object.end()) skip = &*found;
  if (skip == nullptr || skip->is_null()) return;
  if (!skip->is_array()) quantization.fail("llm_int8_skip_modules must be a list of module names");
  for (const auto& name : *skip) {
    if (!name.is_string()) quantization.fail("llm_int8_skip_modules must be a list of module names");
    config.bnb_skip_modules.push_back(name.get<std::string>());
  }
}

[[noreturn]] void refuse(const ConfigKeys& keys, const std::string& what) {
  keys.fail("the model's weights are quantized with " + what +
            "; zerotune loads unquantized bf16, fp16 or fp32 weights, and bitsandbytes 4-bit ones (load_in_4bit): use "
            "the model this one was quantized from (usually the same name without -GPTQ, -AWQ, -FP8, -Int4, -int8 or "
            "-bnb-8bit)");
}

// THUDM's ChatGLM code quantizes in place and saves quantization_bit beside packed integer
// weights and their scales (chatglm2-6b-int4, a model.quantize(4) saved); 0 means unquantized.
void refuse_thudm_quantization(const ConfigKeys& keys) {
  const std::int64_t bits = keys.integer("quantization_bit", 0);
  if (bits != 0)
    refuse(keys, "THUDM's " + std::to_string(bits) + "-bit quantization (quantization_bit " + std::to_string(bits) +
                     ", its remote code's packed weights)");
}

}  // namespace

void read_quantization(const ConfigKeys& keys, ModelConfig& config) {
  refuse_thudm_quantization(keys);
  const std::optional<Quantization> declared = declared_quantization(keys);
  if (!declared) return;
  const std::string key = declared->key;
  const nlohmann::ordered_json& quantization = *keys.object(key);
  const bool four_bit = quantization.value("load_in_4bit", false) == true;
  if (declared->method == "bitsandbytes" && four_bit) return read_bnb_4bit(keys, declared->key, config);
  const std::string what = declared->method.empty() ? "a method its " + key + " does not name"
                                                    : described(quantization, declared->method) + " (" + key +
                                                          ".quant_method '" + declared->method + "')";
  refuse(keys, what);
}

}  // namespace zt::models::detail
