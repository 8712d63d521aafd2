// vocab.json + merges.txt, the files of transformers' slow Qwen2Tokenizer and GPT2Tokenizer.
// The pre-tokenizer regex and NFC come from the tokenizer class, as in those classes.
#include <sstream>

#include "runtime/error.h"
#include "text/tokenizer/byte_level.h"
#include "text/tokenizer/byte_level_tokenizer.h"
#include "text/tokenizer/tokenizer_files.h"
#include "text/tokenizer/tokenizer_loaders.h"

namespace zt::models {
namespace {

ByteLevelVocab read_vocab_json(const std::string& path) {
  const nlohmann::json json = read_tokenizer_json(path);
  if (!json.is_object()) zt::fail(path + ": expected a JSON object of token -> id");
  ByteLevelVocab vocab;
  for (const auto& [token, id] : json.items()) {
    if (!id.is_number_integer() || id.get<TokenId>() < 0) zt::fail(path + ": '" + token + "' has no valid token id");
    const auto i = static_cast<std::size_t>(id.get<TokenId>());
    if (i >= vocab.spellings.size()) {
      vocab.spellings.resize(i + 1);
      vocab.bytes.resize(i + 1);
    }
    vocab.spellings[i] = token;
    if (!byte_level::decode(token, vocab.bytes[i])) vocab.bytes[i] = token;
  }
  return vocab;
}

void read_merges_txt(const std::string& path, const ByteLevelVocab& vocab, BytePairEncoder& bpe) {
  StringMap<TokenId> ids;
  for (std::size_t i = 0; i < vocab.spellings.size(); ++i)
    if (!vocab.spellings[i].empty()) ids.emplace(vocab.spellings[i], static_cast<TokenId>(i));
  std::istringstream lines(read_tokenizer_file(path));
  std::string line;
  std::int32_t rank = 0;
  for (std::size_t number = 1; std::getline(lines, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (number == 1 && line.rfind("#version", 0) == 0)) continue;
    const std::size_t space = line.find(' ');
    if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos)
      zt::fail(path + ":" + std::to_string(number) + ": expected 'left right', got '" + line + "'");
    auto id_of = [&](const std::string& token) {
      auto it = ids.find(token);
      if (it == ids.end())
        zt::fail(path + ":" + std::to_string(number) + ": '" + token + "' is not in the vocab.json beside it");
      return it->second;
    };
    const std::string left = line.substr(0, space), right = line.substr(space + 1);
    const TokenId left_id = id_of(left), right_id = id_of(right);
    bpe.add_merge(left_id, right_id, id_of(left + right), rank++);
  }
}

}  // namespace

std::unique_ptr<Tokenizer> load_vocab_and_merges(const std::string& vocab_path, const std::string& merges_path,
                                                 const TokenizerConfig& config) {
  ByteLevelBpeOptions options;
  options.format = "vocab.json+merges.txt";
  const std::string& cls = config.tokenizer_class;
  if (cls.empty() || cls == "Qwen2Tokenizer" || cls == "Qwen2TokenizerFast") {
    options.pattern = std::string(kQwenPretokenizerPattern);
    options.nfc = true;
  } else if (cls == "GPT2Tokenizer" || cls == "GPT2TokenizerFast") {
    options.pattern = std::string(kGpt2PretokenizerPattern);
  } else {
    zt::fail(config.source + ": tokenizer_class '" + cls +
             "' with vocab.json + merges.txt is not supported "
             "(supported: Qwen2Tokenizer, GPT2Tokenizer); a tokenizer.json would be read instead");
  }
  ByteLevelVocab vocab = read_vocab_json(vocab_path);
  std::vector<std::string> mergeable(vocab.spellings.size());
  std::string decoded;
  for (std::size_t i = 0; i < mergeable.size(); ++i)
    if (byte_level::decode(vocab.spellings[i], decoded)) mergeable[i] = decoded;
  auto bpe = std::make_unique<BytePairEncoder>(mergeable, vocab_path);
  read_merges_txt(merges_path, vocab, *bpe);
  AddedTokens added;
  for (const AddedToken& token : config.added_tokens) added.add(token);
  auto tokenizer = std::make_unique<ByteLevelBpeTokenizer>(std::move(vocab), std::move(bpe), std::move(added),
                                                           std::move(options), vocab_path);
  apply_special_tokens(*tokenizer, config, {});
  return tokenizer;
}

}  // namespace zt::models
