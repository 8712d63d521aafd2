// One interface over every tokenizer format zerotune reads: Hugging Face tokenizer.json
// (byte-level BPE), vocab.json + merges.txt, GLM-4's tiktoken-format tokenizer.model and
// ChatGLM2/3's sentencepiece tokenizer.model. load_tokenizer() picks the format from the files
// in a model folder. See docs/TOKENIZERS.md.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace zt::models {

using TokenId = std::int32_t;

// The ids named by tokenizer_config.json (bos_token, eos_token, pad_token), or the
// format's own defaults where the file names none.
struct SpecialTokenIds {
  std::optional<TokenId> bos;
  std::optional<TokenId> eos;
  std::optional<TokenId> pad;
};

// What decoding one token depends on from the tokens before it: sentencepiece drops the
// leading space of the first piece after the start or after a special token.
struct DecodeState {
  bool at_segment_start = true;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // `text` must be valid UTF-8 (an error names the first bad byte's offset). With
  // add_special_tokens the format's prefix/suffix tokens are added, as HF does by default
  // ([gMASK] and sop for GLM; nothing for Qwen).
  virtual std::vector<TokenId> encode(std::string_view text, bool add_special_tokens = true) const = 0;

  // Text of `ids`; bytes that do not form UTF-8 become U+FFFD as HF's decoders do. An id at
  // or past vocab_size() has no token and gives no text, as in HF's tokenizers: a model whose
  // embedding is padded past its tokenizer (Qwen2.5's 151936 rows for 151669 tokens) can
  // generate one. A negative id is an error. Ids a user gives are checked with
  // require_valid_id first.
  std::string decode(std::span<const TokenId> ids, bool skip_special_tokens = false) const;

  // Appends the raw bytes of one token (possibly part of a UTF-8 character); `id` must be in
  // [0, vocab_size()) (decode and StreamDecoder leave out those past it).
  virtual void append_token_bytes(TokenId id, bool skip_special_tokens, DecodeState& state, std::string& out) const = 0;
  // Whether `id` has a token: in [0, vocab_size()).
  bool has_token(TokenId id) const { return id >= 0 && id < vocab_size(); }

  // The vocabulary string of a token as HF spells it ("Ġhello" for byte-level BPE).
  virtual std::optional<TokenId> token_to_id(std::string_view token) const = 0;
  virtual std::string id_to_token(TokenId id) const = 0;
  // One past the largest id, added tokens included (len(tokenizer) in transformers).
  virtual std::int64_t vocab_size() const = 0;
  virtual bool is_special(TokenId id) const = 0;
  // "tokenizer.json", "vocab.json+merges.txt", "tiktoken" or "sentencepiece".
  virtual std::string_view format() const = 0;

  const SpecialTokenIds& special_ids() const { return special_ids_; }
  void set_special_ids(SpecialTokenIds ids) { special_ids_ = ids; }
  // The file the tokenizer came from, for error messages.
  const std::string& source() const { return source_; }
  // Throws naming the id and the valid range unless has_token(id).
  void require_valid_id(TokenId id) const;

 protected:
  explicit Tokenizer(std::string source) : source_(std::move(source)) {}

 private:
  std::string source_;
  SpecialTokenIds special_ids_;
};

// Reads the tokenizer of a model folder: tokenizer.json, else vocab.json + merges.txt, else
// tokenizer.model (sentencepiece protobuf or tiktoken text, told apart by content), plus
// tokenizer_config.json for the special tokens. A folder with none of them, or a file that
// is not what its name says, is an error naming the file.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& model_dir);

// False when zerotune was built without PCRE2, utf8proc and sentencepiece; then
// load_tokenizer() throws tokenizer_support_message().
bool tokenizers_available();
const char* tokenizer_support_message();

}  // namespace zt::models
