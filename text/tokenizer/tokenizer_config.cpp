#include "text/tokenizer/tokenizer_config.h"

#include "runtime/error.h"
#include "text/tokenizer/tokenizer_files.h"

namespace zt::models {
namespace {

NamedToken named_token(const nlohmann::json& json, const std::string& key, const std::string& source) {
  NamedToken token;
  if (!json.contains(key)) return token;
  token.named = true;
  const nlohmann::json& value = json.at(key);
  if (value.is_null()) return token;
  if (value.is_string()) {
    token.content = value.get<std::string>();
  } else if (value.is_object() && value.contains("content") && value.at("content").is_string()) {
    token.content = value.at("content").get<std::string>();
  } else {
    zt::fail(source + ": key '" + key + "' must be a string, an object with \"content\", or null; got " + value.dump());
  }
  return token;
}

bool flag(const nlohmann::json& entry, const char* key, bool fallback) {
  return entry.contains(key) && entry.at(key).is_boolean() ? entry.at(key).get<bool>() : fallback;
}

// The id a key of added_tokens_decoder spells ("151643"), or -1 when it spells none.
TokenId token_id_of(const std::string& key) {
  if (key.empty() || key.size() > 8 || key.find_first_not_of("0123456789") != std::string::npos) return -1;
  const long id = std::stol(key);
  return id <= kMaxTokenId ? static_cast<TokenId>(id) : -1;
}

std::vector<AddedToken> added_tokens_decoder(const nlohmann::json& json, const std::string& source) {
  std::vector<AddedToken> tokens;
  if (!json.contains("added_tokens_decoder")) return tokens;
  const nlohmann::json& decoder = json.at("added_tokens_decoder");
  if (!decoder.is_object()) zt::fail(source + ": 'added_tokens_decoder' must be an object of id -> token");
  for (const auto& [key, entry] : decoder.items()) {
    AddedToken token;
    token.id = token_id_of(key);
    if (token.id < 0)
      zt::fail(source + ": 'added_tokens_decoder' key '" + key + "' is not a token id (digits, at most " +
               std::to_string(kMaxTokenId) + ")");
    if (!entry.is_object() || !entry.contains("content") || !entry.at("content").is_string())
      zt::fail(source + ": 'added_tokens_decoder' entry " + key + " needs a string \"content\"");
    token.content = entry.at("content").get<std::string>();
    token.special = flag(entry, "special", false);
    token.lstrip = flag(entry, "lstrip", false);
    token.rstrip = flag(entry, "rstrip", false);
    token.single_word = flag(entry, "single_word", false);
    token.normalized = flag(entry, "normalized", !token.special);
    tokens.push_back(std::move(token));
  }
  return tokens;
}

std::string chat_template_of(const nlohmann::json& json, const std::string& source) {
  if (!json.contains("chat_template")) return {};
  const nlohmann::json& value = json.at("chat_template");
  if (value.is_string()) return value.get<std::string>();
  if (value.is_array())
    for (const auto& entry : value)
      if (entry.is_object() && entry.contains("name") && entry.at("name") == "default" && entry.contains("template")) {
        if (!entry.at("template").is_string())
          zt::fail(source + ": the chat_template named \"default\" must be a string, got " +
                   entry.at("template").dump());
        return entry.at("template").get<std::string>();
      }
  return {};
}

}  // namespace

TokenizerConfig read_tokenizer_config(const std::string& model_dir) {
  const std::string path = model_dir + "/tokenizer_config.json";
  if (!tokenizer_file_exists(path)) return {};
  return parse_tokenizer_config(read_tokenizer_file(path), path);
}

TokenizerConfig parse_tokenizer_config(std::string_view text, const std::string& path) {
  TokenizerConfig config;
  const nlohmann::json json = parse_tokenizer_json_text(text, path);
  if (!json.is_object()) zt::fail(path + ": expected a JSON object");
  config.source = path;
  config.bos = named_token(json, "bos_token", path);
  config.eos = named_token(json, "eos_token", path);
  config.pad = named_token(json, "pad_token", path);
  config.added_tokens = added_tokens_decoder(json, path);
  if (json.contains("tokenizer_class") && json.at("tokenizer_class").is_string())
    config.tokenizer_class = json.at("tokenizer_class").get<std::string>();
  config.chat_template = chat_template_of(json, path);
  return config;
}

void apply_special_tokens(Tokenizer& tokenizer, const TokenizerConfig& config, const SpecialTokenIds& defaults) {
  auto resolve = [&](const NamedToken& named, const char* key, std::optional<TokenId> fallback) {
    if (!named.named) return fallback;
    if (!named.content) return std::optional<TokenId>{};
    const std::optional<TokenId> id = tokenizer.token_to_id(*named.content);
    if (!id)
      zt::fail(config.source + ": " + key + " '" + *named.content + "' is not a token of " + tokenizer.source() +
               "; fix the name or remove the key");
    return id;
  };
  SpecialTokenIds ids;
  ids.bos = resolve(config.bos, "bos_token", defaults.bos);
  ids.eos = resolve(config.eos, "eos_token", defaults.eos);
  ids.pad = resolve(config.pad, "pad_token", defaults.pad);
  tokenizer.set_special_ids(ids);
}

}  // namespace zt::models
