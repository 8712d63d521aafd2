#include "models/hub/model_files.h"

#include <set>
#include <vector>

#include "models/config/config.h"
#include "models/hub/hub_cache.h"
#include "runtime/error.h"

namespace zt::models::hub {
namespace {

namespace fs = std::filesystem;

// What transformers' tokenizers read from a Qwen or GLM repo, and the chat templates
// tokenizer_config.json may leave to files of their own.
constexpr const char* kTokenizerFiles[] = {
    "tokenizer_config.json",   "tokenizer.json",    "vocab.json",          "merges.txt",        "tokenizer.model",
    "special_tokens_map.json", "added_tokens.json", "chat_template.jinja", "chat_template.json"};

// "configuration_chatglm.ChatGLMConfig" -> "configuration_chatglm.py"; nothing for a class of
// another repo ("org/repo--module.Class").
std::string module_file(const std::string& reference, const std::string& source) {
  const std::size_t dot = reference.rfind('.');
  if (dot == std::string::npos || dot == 0 || reference.find("--") != std::string::npos) return "";
  const std::string file = reference.substr(0, dot) + ".py";
  check_file_name(file, source);
  return file;
}

// The modules `json_file`'s auto_map names. A file that is not valid JSON names none here: the
// command that reads it next says what is wrong with it.
std::set<std::string> remote_code_modules(const fs::path& json_file) {
  std::set<std::string> modules;
  std::error_code ec;
  if (!fs::is_regular_file(json_file, ec)) return modules;
  nlohmann::ordered_json json;
  try {
    json = read_json_file(json_file.string());
  } catch (const Error&) {
    return modules;
  }
  if (!json.is_object() || !json.contains("auto_map") || !json["auto_map"].is_object()) return modules;
  for (const auto& [key, value] : json["auto_map"].items()) {
    const std::vector<nlohmann::ordered_json> references =
        value.is_array() ? std::vector<nlohmann::ordered_json>(value.begin(), value.end())
                         : std::vector<nlohmann::ordered_json>{value};
    for (const auto& reference : references)
      if (reference.is_string())
        if (std::string file = module_file(reference.get<std::string>(), json_file.string()); !file.empty())
          modules.insert(file);
  }
  return modules;
}

std::set<std::string> shards_of(const fs::path& index) {
  const nlohmann::ordered_json json = read_json_file(index.string());
  ZT_REQUIRE(json.is_object() && json.contains("weight_map") && json["weight_map"].is_object(),
             index.string() + " has no \"weight_map\" object: not a safetensors index");
  std::set<std::string> shards;
  for (const auto& [tensor, shard] : json["weight_map"].items()) {
    ZT_REQUIRE(shard.is_string(), index.string() + ": the shard of " + tensor + " is not a file name");
    check_file_name(shard.get<std::string>(), index.string());
    shards.insert(shard.get<std::string>());
  }
  return shards;
}

void collect_weights(SnapshotFiles& files) {
  if (files.provide("model.safetensors")) return;
  if (!files.provide("model.safetensors.index.json")) {
    files.missing("model.safetensors",
                  "zerotune reads safetensors weights: model.safetensors, or model.safetensors.index.json and its "
                  "shards (a repo with only PyTorch .bin files needs them converted first)");
    return;
  }
  for (const std::string& shard : shards_of(files.folder() / "model.safetensors.index.json"))
    if (!files.provide(shard)) files.missing(shard, "model.safetensors.index.json lists it");
}

}  // namespace

void collect_model_files(SnapshotFiles& files, ModelParts parts) {
  if (!files.provide("config.json")) {
    files.missing("config.json", "every model has one");
    return;
  }
  files.provide("generation_config.json");
  for (const std::string& module : remote_code_modules(files.folder() / "config.json")) files.provide(module);
  if (parts.tokenizer) {
    for (const char* name : kTokenizerFiles) files.provide(name);
    for (const std::string& module : remote_code_modules(files.folder() / "tokenizer_config.json"))
      files.provide(module);
  }
  if (parts.weights) collect_weights(files);
}

}  // namespace zt::models::hub
