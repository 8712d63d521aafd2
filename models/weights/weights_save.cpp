#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unordered_map>

#include "models/weights/weights.h"
#include "runtime/atomic_file.h"
#include "runtime/error.h"
#include "tensor/safetensors/safetensors_index.h"

namespace zt::models {
namespace {

namespace fs = std::filesystem;

// Files of a model folder that are neither weights nor configs and that the folder's users
// need back: tokenizers, chat templates, and THUDM's remote code (configuration_chatglm.py ...).
bool is_companion_file(const std::string& name) {
  for (const char* prefix : {"tokenizer", "vocab", "chat_template"})
    if (name.rfind(prefix, 0) == 0) return true;
  for (const char* exact : {"merges.txt", "special_tokens_map.json", "added_tokens.json"})
    if (name == exact) return true;
  fs::path path(name);
  return path.extension() == ".py" || path.extension() == ".tiktoken";
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in) fail("cannot read '" + path.string() + "' to copy it into the saved model");
  return bytes.str();
}

}  // namespace

void copy_companion_files(const std::string& source, const std::string& dir) {
  if (source.empty() || !fs::is_directory(source) || fs::equivalent(source, dir)) return;
  for (const auto& entry : fs::directory_iterator(source)) {
    std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && is_companion_file(name))
      write_file_atomically((fs::path(dir) / name).string(), read_bytes(entry.path()));
  }
}

namespace {

// transformers' GenerationConfig.from_model_config: the token ids of config.json.
nlohmann::ordered_json generation_config_from(const ModelConfig& config) {
  nlohmann::ordered_json json = nlohmann::ordered_json::object();
  json["_from_model_config"] = true;
  if (config.bos_token_id) json["bos_token_id"] = *config.bos_token_id;
  if (config.eos_token_ids.size() == 1) json["eos_token_id"] = config.eos_token_ids.front();
  if (config.eos_token_ids.size() > 1) json["eos_token_id"] = config.eos_token_ids;
  if (config.raw.contains("pad_token_id") && !config.raw["pad_token_id"].is_null())
    json["pad_token_id"] = config.raw["pad_token_id"];
  return json;
}

void write_generation_config(const CausalLM& model, const std::string& dir) {
  fs::path source = fs::path(model.source_dir()) / "generation_config.json";
  fs::path target = fs::path(dir) / "generation_config.json";
  if (!model.source_dir().empty() && fs::is_regular_file(source)) {
    if (!fs::equivalent(model.source_dir(), dir)) write_file_atomically(target.string(), read_bytes(source));
    return;
  }
  write_file_atomically(target.string(), generation_config_from(model.config()).dump(2) + "\n");
}

// Each parameter's whole value. 4-bit base weights (models/quant/) exist whole only while their
// layer is gathered: each is dequantized, kept, and its layer released.
std::unordered_map<std::string, Tensor> whole_values(const CausalLM& model) {
  std::unordered_map<std::string, Tensor> values;
  ParameterGatherer* owned = model.owned_parameter_gatherer().get();
  for (const ModuleParameters& module : model.modules()) {
    GatheredModule gathered(owned, module.module);
    for (const NamedParameter& p : module.parameters) values[p.name] = p.variable.data();
  }
  return values;
}

NamedTensors tensors_to_save(const CausalLM& model, const SaveOptions& options) {
  NamedTensors tensors;
  const std::unordered_map<std::string, Tensor> values = whole_values(model);
  for (const NamedParameter& p : model.named_parameters()) {
    const Tensor& value = values.at(p.name);
    tensors.emplace_back(p.name, options.dtype ? value.to(*options.dtype) : value);
  }
  for (const auto& buffer : model.buffers()) tensors.push_back(buffer);
  return tensors;
}

}  // namespace

void save_model(const CausalLM& model, const std::string& dir, const SaveOptions& options) {
  ZT_REQUIRE(options.max_shard_bytes > 0, "save_model: max_shard_bytes must be positive");
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) fail("cannot create the model folder '" + dir + "': " + error.message());
  // transformers refuses safetensors files whose metadata does not say format "pt".
  save_sharded_safetensors(dir, tensors_to_save(model, options), options.max_shard_bytes, {{"format", "pt"}});
  // The weights written are dense, whatever the checkpoint they were loaded from.
  nlohmann::ordered_json config = model.config().raw;
  if (model.config().bnb_4bit) config.erase("quantization_config");
  write_file_atomically((fs::path(dir) / "config.json").string(), config.dump(2) + "\n");
  write_generation_config(model, dir);
  copy_companion_files(model.source_dir(), dir);
}

}  // namespace zt::models
