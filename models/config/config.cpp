#include "models/config/config.h"

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "models/config/config_parsers.h"
#include "runtime/enum_names.h"
#include "runtime/error.h"
#include "runtime/json_text.h"

namespace zt::models {
namespace {

constexpr EnumName<Architecture> kArchitectures[] = {{Architecture::kQwen2, "qwen2"},
                                                     {Architecture::kQwen3, "qwen3"},
                                                     {Architecture::kGlm, "glm"},
                                                     {Architecture::kGlm4, "glm4"},
                                                     {Architecture::kChatGlm, "chatglm"}};

Architecture architecture_of(const detail::ConfigKeys& keys) {
  if (!keys.has("model_type"))
    keys.fail("no 'model_type' key; zerotune reads " + supported_model_types() +
              " (config.json as transformers or THUDM's code writes it)");
  std::string type = keys.string("model_type", "");
  // qwen2_vl, qwen2_5_vl, glm4v, ...: a vision tower and multimodal positions beside the decoder;
  // glm-4v-9b keeps THUDM's chatglm type with its tower in vision_config.
  if (type.ends_with("_vl") || type == "glm4v" || keys.has("vision_config"))
    keys.fail(
        "model_type '" + type + "'" + (keys.has("vision_config") ? " with a vision_config" : "") +
        " is a vision-language model, which zerotune does not implement (it reads text-only models); use "
        "the family's text model instead (Qwen2.5-7B-Instruct for Qwen2.5-VL-7B-Instruct, for instance); supported: " +
        supported_model_types());
  if (std::optional<Architecture> arch = find_value(kArchitectures, type)) return *arch;
  // qwen2_moe, qwen3_moe, glm4_moe, ...: the experts' routed MLPs have no counterpart here.
  if (type.ends_with("_moe"))
    keys.fail("model_type '" + type +
              "' is a mixture-of-experts model, which zerotune does not implement (its models are dense); "
              "supported: " +
              supported_model_types());
  keys.fail("model_type '" + type + "' is not supported; supported: " + supported_model_types());
}

void check_shapes(const detail::ConfigKeys& keys, const ModelConfig& c) {
  if (c.num_heads % c.num_kv_heads != 0)
    keys.fail(std::to_string(c.num_heads) + " attention heads cannot be shared evenly by " +
              std::to_string(c.num_kv_heads) + " key/value heads");
  if (!(c.rope.rotary_fraction > 0.0 && c.rope.rotary_fraction <= 1.0))
    keys.fail("partial_rotary_factor must be in (0, 1], got " + std::to_string(c.rope.rotary_fraction));
  double rotary = static_cast<double>(c.head_dim) * c.rope.rotary_fraction;
  auto rotary_dim = static_cast<std::int64_t>(rotary);
  if (rotary_dim <= 0 || rotary_dim % 2 != 0 || rotary_dim > c.head_dim)
    keys.fail("the rotary part of a head (head_dim " + std::to_string(c.head_dim) + " x " +
              std::to_string(c.rope.rotary_fraction) + ") must be an even number of dims, at least 2");
  if (!(c.norm_eps > 0.0)) keys.fail("the RMSNorm epsilon must be positive, got " + std::to_string(c.norm_eps));
  if (!(c.rope.base > 1.0)) keys.fail("the RoPE base must be greater than 1, got " + std::to_string(c.rope.base));
  if (c.pad_token_id && (*c.pad_token_id < 0 || *c.pad_token_id >= c.vocab_size))
    keys.fail("pad_token_id " + std::to_string(*c.pad_token_id) + " is outside the vocabulary of " +
              std::to_string(c.vocab_size));
}

}  // namespace

const char* architecture_name(Architecture arch) { return name_of(kArchitectures, arch); }

std::string supported_model_types() { return names_of(kArchitectures); }

nlohmann::ordered_json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_json_text(text.str(), path);
}

nlohmann::ordered_json parse_json_text(std::string_view text, const std::string& source) {
  return parse_json<nlohmann::ordered_json>(text, source);
}

ModelConfig parse_config(const nlohmann::ordered_json& json, const std::string& source) {
  detail::ConfigKeys keys(json, source);
  ModelConfig config;
  config.arch = architecture_of(keys);
  if (config.arch == Architecture::kChatGlm) detail::refuse_first_chatglm(keys);
  detail::read_quantization(keys, config);
  config.raw = json;
  config.source = source;
  if (config.arch == Architecture::kChatGlm)
    detail::parse_chatglm_config(keys, config);
  else
    detail::parse_hf_config(keys, config);
  config.torch_dtype = keys.has("dtype") ? keys.string("dtype", "") : keys.string("torch_dtype", "");
  config.eos_token_ids = keys.integer_list("eos_token_id");
  config.bos_token_id = keys.optional_integer("bos_token_id");
  check_shapes(keys, config);
  return config;
}

std::int64_t context_length(const ModelConfig& config) {
  for (const char* key : {"max_position_embeddings", "seq_length"}) {
    auto found = config.raw.find(key);
    if (found != config.raw.end() && found->is_number_integer()) return found->get<std::int64_t>();
  }
  return 0;
}

ModelConfig load_config(const std::string& model_dir) {
  std::string path = (std::filesystem::path(model_dir) / "config.json").string();
  if (!std::filesystem::is_regular_file(path))
    fail("no config.json in '" + model_dir + "' (looked for '" + path +
         "'); pass a Hugging Face model folder (config.json + *.safetensors)");
  return parse_config(read_json_file(path), path);
}

}  // namespace zt::models
