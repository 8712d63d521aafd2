// ChatGLM2/3's sentencepiece tokenizer.model, run by libsentencepiece. ChatGLM's own special
// tokens follow the sentencepiece vocabulary, and text between them is encoded separately
// (each stretch gets sentencepiece's dummy-prefix space), as ChatGLM's tokenizer does.
#include <array>

#include "runtime/error.h"
#include "text/tokenizer/added_tokens.h"
#include "text/tokenizer/tokenizer_files.h"
#include "text/tokenizer/tokenizer_loaders.h"
#include "text/tokenizer/tokenizer_utf8.h"

#if ZT_HAVE_TEXT
#include <sentencepiece_processor.h>
#endif

namespace zt::models {

#if ZT_HAVE_TEXT
namespace {

// In ChatGLM's order. "sop" and "eop" are ordinary words too, so only the bracketed tokens
// are recognised inside text; templates and token_to_id reach all of them by name.
constexpr std::array<std::string_view, 9> kChatGlmSpecialTokens = {
    "[MASK]", "[gMASK]", "[sMASK]", "sop", "eop", "<|system|>", "<|user|>", "<|assistant|>", "<|observation|>"};

constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";  // U+2581, sentencepiece's space

class SentencePieceTokenizer final : public Tokenizer {
 public:
  SentencePieceTokenizer(const std::string& serialized, std::string source) : Tokenizer(source) {
    const auto status = sp_.LoadFromSerializedProto(serialized);
    if (!status.ok())
      zt::fail(source + ": neither a sentencepiece model (" + status.ToString() +
               ") nor a tiktoken file; the file may be truncated or a Git LFS pointer");
    base_ = sp_.GetPieceSize();
    for (std::size_t i = 0; i < kChatGlmSpecialTokens.size(); ++i) {
      const std::string_view name = kChatGlmSpecialTokens[i];
      const bool in_text = name.front() == '[' || name.front() == '<';
      if (in_text) matchable_.add(AddedToken{std::string(name), base_ + static_cast<TokenId>(i)});
    }
    std::vector<std::string> pieces;
    sp_.Encode("a", &pieces).IgnoreError();
    dummy_prefix_ = !pieces.empty() && pieces.front().starts_with(kSpaceSymbol);
  }

  SpecialTokenIds default_special_ids() const {
    SpecialTokenIds ids;
    if (sp_.bos_id() >= 0) ids.bos = sp_.bos_id();
    if (sp_.eos_id() >= 0) ids.eos = sp_.eos_id();
    ids.pad = sp_.pad_id() >= 0 ? sp_.pad_id() : sp_.unk_id();  // ChatGLM pads with <unk>
    return ids;
  }

  std::vector<TokenId> encode(std::string_view text, bool add_special_tokens) const override {
    utf8::require_valid(text, "text to encode with " + source());
    std::vector<TokenId> ids;
    if (add_special_tokens) ids = {special_id("[gMASK]"), special_id("sop")};
    std::vector<TextPiece> pieces;
    matchable_.split(text, /*normalized=*/false, pieces);
    std::vector<int> piece_ids;
    for (const TextPiece& piece : pieces) {
      if (piece.id >= 0) {
        ids.push_back(piece.id);
        continue;
      }
      const auto status = sp_.Encode(piece.text, &piece_ids);
      if (!status.ok()) zt::fail(source() + ": sentencepiece could not encode the text: " + status.ToString());
      ids.insert(ids.end(), piece_ids.begin(), piece_ids.end());
    }
    return ids;
  }

  void append_token_bytes(TokenId id, bool skip_special_tokens, DecodeState& state, std::string& out) const override {
    require_valid_id(id);
    if (id >= base_) {
      if (skip_special_tokens) return;
      out += kChatGlmSpecialTokens[static_cast<std::size_t>(id - base_)];
      state.at_segment_start = true;  // ChatGLM decodes the text after a special on its own
      return;
    }
    if (sp_.IsControl(id)) return;
    if (sp_.IsUnknown(id)) {
      if (!skip_special_tokens) out += " \xE2\x81\x87 ";  // sentencepiece's surface for <unk>
      state.at_segment_start = false;
      return;
    }
    const std::string& piece = sp_.IdToPiece(id);
    if (sp_.IsByte(id)) {
      out.push_back(static_cast<char>(std::stoi(piece.substr(3, 2), nullptr, 16)));  // "<0xAB>"
      state.at_segment_start = false;
      return;
    }
    std::string_view rest = piece;
    if (state.at_segment_start && dummy_prefix_ && rest.starts_with(kSpaceSymbol))
      rest.remove_prefix(kSpaceSymbol.size());
    state.at_segment_start = false;
    for (std::size_t pos = 0; pos < rest.size();) {
      if (rest.compare(pos, kSpaceSymbol.size(), kSpaceSymbol) == 0) {
        out.push_back(' ');
        pos += kSpaceSymbol.size();
      } else {
        out.push_back(rest[pos++]);
      }
    }
  }

  std::optional<TokenId> token_to_id(std::string_view token) const override {
    for (std::size_t i = 0; i < kChatGlmSpecialTokens.size(); ++i)
      if (kChatGlmSpecialTokens[i] == token) return base_ + static_cast<TokenId>(i);
    const int id = sp_.PieceToId(token);
    if (id == sp_.unk_id() && sp_.IdToPiece(id) != token) return std::nullopt;
    return id;
  }

  std::string id_to_token(TokenId id) const override {
    require_valid_id(id);
    if (id >= base_) return std::string(kChatGlmSpecialTokens[static_cast<std::size_t>(id - base_)]);
    return sp_.IdToPiece(id);
  }

  std::int64_t vocab_size() const override { return base_ + static_cast<TokenId>(kChatGlmSpecialTokens.size()); }
  bool is_special(TokenId id) const override {
    return id >= base_ || (id >= 0 && id < base_ && (sp_.IsControl(id) || sp_.IsUnknown(id)));
  }
  std::string_view format() const override { return "sentencepiece"; }

 private:
  TokenId special_id(std::string_view name) const { return *token_to_id(name); }

  sentencepiece::SentencePieceProcessor sp_;
  TokenId base_ = 0;
  AddedTokens matchable_;
  bool dummy_prefix_ = true;
};

}  // namespace

std::unique_ptr<Tokenizer> load_sentencepiece(const std::string& path, const TokenizerConfig& config) {
  auto tokenizer = std::make_unique<SentencePieceTokenizer>(read_tokenizer_file(path), path);
  apply_special_tokens(*tokenizer, config, tokenizer->default_special_ids());
  return tokenizer;
}
#else
std::unique_ptr<Tokenizer> load_sentencepiece(const std::string&, const TokenizerConfig&) {
  zt::fail(tokenizer_support_message());
}
#endif

}  // namespace zt::models
