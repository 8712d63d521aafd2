#include "text/tokenizer/byte_level_tokenizer.h"

#include <algorithm>

#include "runtime/error.h"
#include "text/tokenizer/tokenizer_utf8.h"

namespace zt::models {

ByteLevelBpeTokenizer::ByteLevelBpeTokenizer(ByteLevelVocab vocab, std::unique_ptr<BytePairEncoder> bpe,
                                             AddedTokens added, ByteLevelBpeOptions options, std::string source)
    : Tokenizer(source),
      vocab_(std::move(vocab)),
      bpe_(std::move(bpe)),
      added_(std::move(added)),
      options_(std::move(options)),
      regex_(std::make_unique<PretokenizerRegex>(options_.pattern, source)) {
  ids_by_spelling_.reserve(vocab_.spellings.size());
  for (std::size_t id = 0; id < vocab_.spellings.size(); ++id)
    if (!vocab_.spellings[id].empty()) ids_by_spelling_.emplace(vocab_.spellings[id], static_cast<TokenId>(id));
  vocab_size_ = std::max<std::int64_t>(static_cast<std::int64_t>(vocab_.spellings.size()), added_.id_end());
}

std::vector<TokenId> ByteLevelBpeTokenizer::encode(std::string_view text, bool add_special_tokens) const {
  utf8::require_valid(text, "text to encode with " + source());
  std::vector<TokenId> ids;
  ids.reserve(text.size() / 3 + 8);
  if (add_special_tokens) ids = options_.prefix;
  std::vector<TextPiece> pieces;
  added_.split(text, /*normalized=*/false, pieces);
  for (const TextPiece& piece : pieces) {
    if (piece.id >= 0) {
      ids.push_back(piece.id);
    } else if (options_.nfc && !utf8::nfc_stable(piece.text)) {
      encode_normalized(utf8::nfc(piece.text), ids);
    } else {
      encode_normalized(piece.text, ids);
    }
  }
  if (add_special_tokens) ids.insert(ids.end(), options_.suffix.begin(), options_.suffix.end());
  return ids;
}

void ByteLevelBpeTokenizer::encode_normalized(std::string_view text, std::vector<TokenId>& out) const {
  std::vector<TextPiece> pieces;
  added_.split(text, /*normalized=*/true, pieces);
  for (const TextPiece& piece : pieces) {
    if (piece.id >= 0)
      out.push_back(piece.id);
    else if (options_.add_prefix_space && piece.text.front() != ' ')
      encode_plain(std::string(" ").append(piece.text), out);
    else
      encode_plain(piece.text, out);
  }
}

void ByteLevelBpeTokenizer::encode_plain(std::string_view text, std::vector<TokenId>& out) const {
  thread_local std::vector<std::string_view> pieces;
  pieces.clear();
  regex_->split(text, pieces);
  for (std::string_view piece : pieces) bpe_->encode(piece, out);
}

void ByteLevelBpeTokenizer::append_token_bytes(TokenId id, bool skip_special_tokens, DecodeState&,
                                               std::string& out) const {
  require_valid_id(id);
  if (const AddedToken* added = added_.find_id(id)) {
    if (!(skip_special_tokens && added->special)) out += added->content;
    return;
  }
  // An id the model's padded vocabulary has and the tokenizer does not (an untrained model
  // can produce one) decodes to nothing, as in transformers' tokenizers.
  if (static_cast<std::size_t>(id) >= vocab_.bytes.size() || vocab_.spellings[id].empty()) return;
  out += vocab_.bytes[id];
}

std::optional<TokenId> ByteLevelBpeTokenizer::token_to_id(std::string_view token) const {
  if (const AddedToken* added = added_.find_content(token)) return added->id;
  auto it = ids_by_spelling_.find(token);
  if (it == ids_by_spelling_.end()) return std::nullopt;
  return it->second;
}

std::string ByteLevelBpeTokenizer::id_to_token(TokenId id) const {
  require_valid_id(id);
  if (const AddedToken* added = added_.find_id(id)) return added->content;
  if (static_cast<std::size_t>(id) < vocab_.spellings.size()) return vocab_.spellings[id];
  return {};
}

bool ByteLevelBpeTokenizer::is_special(TokenId id) const {
  const AddedToken* added = added_.find_id(id);
  return added != nullptr && added->special;
}

}  // namespace zt::models
