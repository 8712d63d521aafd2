// tokenizer.json as HF tokenizers writes it, for the byte-level BPE files of Qwen and GLM-4.
// Anything this reader does not implement exactly is refused by name rather than
// approximated.
#include <algorithm>

#include "runtime/error.h"
#include "text/tokenizer/byte_level.h"
#include "text/tokenizer/byte_level_tokenizer.h"
#include "text/tokenizer/tokenizer_files.h"
#include "text/tokenizer/tokenizer_loaders.h"

namespace zt::models {
namespace {

using nlohmann::json;

class JsonReader {
 public:
  explicit JsonReader(std::string path) : path_(std::move(path)) {}
  [[noreturn]] void fail(const std::string& message) const { zt::fail(path_ + ": " + message); }
  std::string type_of(const json& node, const std::string& where) const {
    if (!node.is_object() || !node.contains("type") || !node.at("type").is_string())
      fail(where + " must be an object with a string \"type\"");
    return node.at("type").get<std::string>();
  }
  bool flag(const json& node, const char* key, bool fallback) const {
    if (!node.contains(key) || node.at(key).is_null()) return fallback;
    if (!node.at(key).is_boolean()) fail(std::string("'") + key + "' must be true or false");
    return node.at(key).get<bool>();
  }
  // The string at node[key]; empty when `node` is not an object or lacks the key.
  std::string text(const json& node, const char* key, const std::string& where) const {
    if (!node.is_object() || !node.contains(key) || node.at(key).is_null()) return "";
    if (!node.at(key).is_string()) fail(where + " '" + key + "' must be a string, got " + node.at(key).dump());
    return node.at(key).get<std::string>();
  }
  TokenId token_id(const json& value, const std::string& where) const {
    if (!value.is_number_integer() || value.get<std::int64_t>() < 0 || value.get<std::uint64_t>() > kMaxTokenId)
      fail(where + " must be a token id from 0 to " + std::to_string(kMaxTokenId) + ", got " + value.dump());
    return static_cast<TokenId>(value.get<std::int64_t>());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string escape_literal(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

bool parse_normalizer(const JsonReader& r, const json& node) {
  if (node.is_null()) return false;
  const std::string type = r.type_of(node, "normalizer");
  if (type == "NFC") return true;
  if (type == "Sequence") {
    bool nfc = false;
    for (const json& inner : node.value("normalizers", json::array())) nfc = parse_normalizer(r, inner) || nfc;
    return nfc;
  }
  r.fail("normalizer type '" + type + "' is not supported (supported: NFC, or none)");
}

struct PreTokenizer {
  std::string pattern;
  bool byte_level = false;
  bool add_prefix_space = false;
};

void parse_pre_tokenizer(const JsonReader& r, const json& node, PreTokenizer& out) {
  const std::string type = r.type_of(node, "pre_tokenizer");
  if (type == "Sequence") {
    for (const json& inner : node.value("pretokenizers", json::array())) parse_pre_tokenizer(r, inner, out);
  } else if (type == "Split") {
    if (!out.pattern.empty()) r.fail("more than one regex pre-tokenizer is not supported");
    const json& pattern = node.value("pattern", json::object());
    if (pattern.contains("Regex") && pattern.at("Regex").is_string())
      out.pattern = pattern.at("Regex").get<std::string>();
    else if (pattern.contains("String") && pattern.at("String").is_string())
      out.pattern = escape_literal(pattern.at("String").get<std::string>());
    else
      r.fail("Split pre-tokenizer needs a \"pattern\" with \"Regex\" or \"String\"");
    if (r.text(node, "behavior", "the Split pre-tokenizer's") != "Isolated" || r.flag(node, "invert", false))
      r.fail("only the Split pre-tokenizer with behavior \"Isolated\" and invert false is supported");
  } else if (type == "ByteLevel") {
    out.byte_level = true;
    if (r.flag(node, "use_regex", true)) {
      if (!out.pattern.empty()) r.fail("a ByteLevel pre-tokenizer with use_regex after a Split is not supported");
      out.pattern = std::string(kGpt2PretokenizerPattern);
      out.add_prefix_space = r.flag(node, "add_prefix_space", false);
    } else if (r.flag(node, "add_prefix_space", false)) {
      r.fail("ByteLevel add_prefix_space after a Split pre-tokenizer is not supported");
    }
  } else {
    r.fail("pre_tokenizer type '" + type + "' is not supported (supported: Split, ByteLevel, Sequence)");
  }
}

void check_decoder(const JsonReader& r, const json& node) {
  if (node.is_null()) r.fail("a byte-level BPE tokenizer needs the ByteLevel decoder, and 'decoder' is null");
  const std::string type = r.type_of(node, "decoder");
  if (type == "ByteLevel") return;
  if (type == "Sequence") {
    for (const json& inner : node.value("decoders", json::array())) check_decoder(r, inner);
    return;
  }
  r.fail("decoder type '" + type + "' is not supported (supported: ByteLevel)");
}

// TemplateProcessing's "single" template: the special tokens around the sequence $A.
void parse_post_processor(const JsonReader& r, const json& node, ByteLevelBpeOptions& options) {
  if (node.is_null()) return;
  const std::string type = r.type_of(node, "post_processor");
  if (type == "ByteLevel") return;
  if (type == "Sequence") {
    for (const json& inner : node.value("processors", json::array())) parse_post_processor(r, inner, options);
    return;
  }
  if (type != "TemplateProcessing")
    r.fail("post_processor type '" + type + "' is not supported (supported: ByteLevel, TemplateProcessing)");
  const json& specials = node.value("special_tokens", json::object());
  bool seen_sequence = false;
  for (const json& item : node.value("single", json::array())) {
    if (item.contains("Sequence")) {
      seen_sequence = true;
      continue;
    }
    const json special = item.is_object() ? item.value("SpecialToken", json()) : json();
    const std::string name = r.text(special, "id", "post_processor SpecialToken");
    if (!specials.contains(name) || !specials.at(name).is_object())
      r.fail("post_processor names special token '" + name + "' it does not define");
    for (const json& id : specials.at(name).value("ids", json::array()))
      (seen_sequence ? options.suffix : options.prefix)
          .push_back(r.token_id(id, "post_processor special token '" + name + "' id"));
  }
}

ByteLevelVocab read_vocab(const JsonReader& r, const json& vocab) {
  if (!vocab.is_object()) r.fail("model.vocab must be an object of token -> id");
  ByteLevelVocab out;
  TokenId max_id = -1;
  for (const auto& [token, id] : vocab.items())
    max_id = std::max(max_id, r.token_id(id, "model.vocab['" + token + "']"));
  // Ids run 0..N-1 in tokenizers' files; far larger ones mean a damaged file, not a vocabulary.
  if (max_id >= 0 && static_cast<std::size_t>(max_id) >= 2 * vocab.size())
    r.fail("model.vocab gives id " + std::to_string(max_id) + " to one of only " + std::to_string(vocab.size()) +
           " tokens; the ids of a vocabulary run from 0 without large gaps");
  out.spellings.resize(static_cast<std::size_t>(max_id + 1));
  out.bytes.resize(out.spellings.size());
  for (const auto& [token, id] : vocab.items()) {
    const auto i = static_cast<std::size_t>(id.get<TokenId>());
    out.spellings[i] = token;
    // A token outside the byte-level alphabet decodes to its own text, as HF's decoder does.
    if (!byte_level::decode(token, out.bytes[i])) out.bytes[i] = token;
  }
  return out;
}

// Byte merging only reaches tokens spelled in the byte-level alphabet.
std::vector<std::string> mergeable_bytes(const ByteLevelVocab& vocab) {
  std::vector<std::string> bytes(vocab.spellings.size());
  std::string decoded;
  for (std::size_t i = 0; i < bytes.size(); ++i)
    if (byte_level::decode(vocab.spellings[i], decoded)) bytes[i] = decoded;
  return bytes;
}

void read_merges(const JsonReader& r, const json& merges, const StringMap<TokenId>& ids, BytePairEncoder& bpe) {
  if (!merges.is_array()) r.fail("model.merges must be a list");
  auto id_of = [&](const std::string& token, std::size_t rank) {
    auto it = ids.find(token);
    if (it == ids.end()) r.fail("merge " + std::to_string(rank) + " uses '" + token + "', which is not in model.vocab");
    return it->second;
  };
  for (std::size_t rank = 0; rank < merges.size(); ++rank) {
    const json& merge = merges[rank];
    std::string left, right;
    if (merge.is_string()) {
      const std::string line = merge.get<std::string>();
      const std::size_t space = line.find(' ', 1);
      if (space == std::string::npos) r.fail("merge " + std::to_string(rank) + " '" + line + "' is not 'left right'");
      left = line.substr(0, space);
      right = line.substr(space + 1);
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
      left = merge[0].get<std::string>();
      right = merge[1].get<std::string>();
    } else {
      r.fail("merge " + std::to_string(rank) + " must be \"left right\" or [left, right]");
    }
    const TokenId left_id = id_of(left, rank), right_id = id_of(right, rank);
    bpe.add_merge(left_id, right_id, id_of(left + right, rank), static_cast<std::int32_t>(rank));
  }
}

void check_bpe_model(const JsonReader& r, const json& model) {
  if (r.type_of(model, "model") != "BPE")
    r.fail("model type '" + model.at("type").get<std::string>() + "' is not supported (supported: BPE)");
  if (model.contains("dropout") && !model.at("dropout").is_null()) r.fail("BPE dropout is not supported");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (model.contains(key) && model.at(key).is_string() && !model.at(key).get<std::string>().empty())
      r.fail(std::string("BPE '") + key + "' is not supported");
  if (r.flag(model, "byte_fallback", false)) r.fail("BPE byte_fallback is not supported");
}

AddedTokens read_added_tokens(const JsonReader& r, const json& list, const TokenizerConfig& config) {
  AddedTokens added;
  for (const json& entry : list) {
    if (!entry.is_object() || !entry.contains("id") || !entry.contains("content"))
      r.fail("every added_tokens entry needs \"id\" and \"content\"");
    AddedToken token;
    token.id = r.token_id(entry.at("id"), "an added_tokens \"id\"");
    token.content = r.text(entry, "content", "an added_tokens entry's");
    token.special = r.flag(entry, "special", false);
    token.lstrip = r.flag(entry, "lstrip", false);
    token.rstrip = r.flag(entry, "rstrip", false);
    token.single_word = r.flag(entry, "single_word", false);
    token.normalized = r.flag(entry, "normalized", !token.special);
    added.add(std::move(token));
  }
  // transformers also registers the tokens tokenizer_config.json lists but tokenizer.json lacks.
  for (const AddedToken& token : config.added_tokens)
    if (added.find_content(token.content) == nullptr) added.add(token);
  return added;
}

// The post-processor's ids reach the model, so each must be a token of this tokenizer.
void check_added_ids(const JsonReader& r, const ByteLevelBpeOptions& options, std::int64_t vocab_size) {
  for (const std::vector<TokenId>* added : {&options.prefix, &options.suffix})
    for (TokenId id : *added)
      if (id >= vocab_size)
        r.fail("post_processor adds token id " + std::to_string(id) + ", which is not in the vocabulary (ids 0.." +
               std::to_string(vocab_size - 1) + ")");
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer_json(const std::string& path, const TokenizerConfig& config) {
  return parse_tokenizer_json(read_tokenizer_file(path), path, config);
}

std::unique_ptr<Tokenizer> parse_tokenizer_json(std::string_view text, const std::string& path,
                                                const TokenizerConfig& config) {
  const JsonReader r(path);
  const json file = parse_tokenizer_json_text(text, path);
  if (!file.is_object() || !file.contains("model"))
    r.fail("not a tokenizers file: it has no \"model\" (expected HF tokenizers' tokenizer.json)");
  const json& model = file.at("model");
  check_bpe_model(r, model);
  ByteLevelBpeOptions options;
  options.format = "tokenizer.json";
  options.nfc = parse_normalizer(r, file.value("normalizer", json()));
  PreTokenizer pre;
  if (file.contains("pre_tokenizer") && !file.at("pre_tokenizer").is_null())
    parse_pre_tokenizer(r, file.at("pre_tokenizer"), pre);
  if (!pre.byte_level || pre.pattern.empty())
    r.fail("only byte-level BPE is supported: the pre_tokenizer must contain ByteLevel and a regex split");
  options.pattern = pre.pattern;
  options.add_prefix_space = pre.add_prefix_space;
  check_decoder(r, file.value("decoder", json()));
  parse_post_processor(r, file.value("post_processor", json()), options);

  ByteLevelVocab vocab = read_vocab(r, model.value("vocab", json()));
  auto bpe = std::make_unique<BytePairEncoder>(mergeable_bytes(vocab), path);
  StringMap<TokenId> ids;
  for (std::size_t i = 0; i < vocab.spellings.size(); ++i)
    if (!vocab.spellings[i].empty()) ids.emplace(vocab.spellings[i], static_cast<TokenId>(i));
  read_merges(r, model.value("merges", json::array()), ids, *bpe);
  bpe->set_whole_piece_lookup(r.flag(model, "ignore_merges", false));
  AddedTokens added = read_added_tokens(r, file.value("added_tokens", json::array()), config);
  check_added_ids(r, options,
                  std::max<std::int64_t>(static_cast<std::int64_t>(vocab.spellings.size()), added.id_end()));
  auto tokenizer = std::make_unique<ByteLevelBpeTokenizer>(std::move(vocab), std::move(bpe), std::move(added),
                                                           std::move(options), path);
  apply_special_tokens(*tokenizer, config, {});
  return tokenizer;
}

}  // namespace zt::models
