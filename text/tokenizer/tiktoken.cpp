// GLM-4's tiktoken-format tokenizer.model: one "<base64 of the token's bytes> <rank>" line
// per token, rank = id. GLM-4's special tokens take the ids after the vocabulary.
#include <algorithm>
#include <array>
#include <string_view>

#include "runtime/error.h"
#include "text/tokenizer/byte_level.h"
#include "text/tokenizer/byte_level_tokenizer.h"
#include "text/tokenizer/tokenizer_files.h"
#include "text/tokenizer/tokenizer_loaders.h"

namespace zt::models {
namespace {

constexpr std::array<std::string_view, 14> kGlm4SpecialTokens = {"<|endoftext|>",
                                                                 "[MASK]",
                                                                 "[gMASK]",
                                                                 "[sMASK]",
                                                                 "<sop>",
                                                                 "<eop>",
                                                                 "<|system|>",
                                                                 "<|user|>",
                                                                 "<|assistant|>",
                                                                 "<|observation|>",
                                                                 "<|begin_of_image|>",
                                                                 "<|end_of_image|>",
                                                                 "<|begin_of_video|>",
                                                                 "<|end_of_video|>"};

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

bool base64_decode(std::string_view text, std::string& out) {
  out.clear();
  if (text.empty() || text.size() % 4 != 0) return false;
  std::uint32_t bits = 0;
  int count = 0;
  std::size_t padding = 0;
  for (char c : text) {
    if (c == '=') {
      ++padding;
      bits <<= 6;
    } else {
      const int v = base64_value(c);
      if (v < 0 || padding > 0) return false;
      bits = (bits << 6) | static_cast<std::uint32_t>(v);
    }
    if (++count == 4) {
      out.push_back(static_cast<char>((bits >> 16) & 0xFF));
      out.push_back(static_cast<char>((bits >> 8) & 0xFF));
      out.push_back(static_cast<char>(bits & 0xFF));
      bits = 0;
      count = 0;
    }
  }
  if (padding > 2) return false;
  out.resize(out.size() - padding);
  return true;
}

bool parse_line(std::string_view line, std::string& bytes, TokenId& rank) {
  const std::size_t space = line.find(' ');
  if (space == std::string_view::npos || space + 1 >= line.size()) return false;
  const std::string_view number = line.substr(space + 1);
  if (number.size() > 9) return false;
  rank = 0;
  for (char c : number) {
    if (c < '0' || c > '9') return false;
    rank = rank * 10 + (c - '0');
  }
  return base64_decode(line.substr(0, space), bytes);
}

}  // namespace

bool looks_like_tiktoken(std::string_view head) {
  // The first line with content decides, as the loader skips empty lines; a file of one line
  // may not end with a newline.
  head.remove_prefix(std::min(head.find_first_not_of("\r\n"), head.size()));
  std::string bytes;
  TokenId rank = 0;
  std::string_view line = head.substr(0, head.find('\n'));
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return parse_line(line, bytes, rank);
}

std::unique_ptr<Tokenizer> load_tiktoken(const std::string& path, const TokenizerConfig& config) {
  return parse_tiktoken(read_tokenizer_file(path), path, config);
}

std::unique_ptr<Tokenizer> parse_tiktoken(std::string_view text, const std::string& path,
                                          const TokenizerConfig& config) {
  ByteLevelVocab vocab;
  std::string bytes;
  std::size_t tokens = 0, line_start = 0;
  // A rank beyond the file's lines is a gap for certain, found without growing the tables to it.
  const auto lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
  bool rank_beyond_lines = false;
  for (std::size_t number = 1; line_start < text.size(); ++number) {
    std::size_t line_end = text.find('\n', line_start);
    if (line_end == std::string::npos) line_end = text.size();
    std::string_view line(text.data() + line_start, line_end - line_start);
    line_start = line_end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    TokenId rank = 0;
    if (!parse_line(line, bytes, rank))
      zt::fail(path + ":" + std::to_string(number) + ": expected '<base64 token> <rank>', the tiktoken format");
    const auto i = static_cast<std::size_t>(rank);
    ++tokens;
    if (i >= lines) {
      rank_beyond_lines = true;
      continue;
    }
    if (i >= vocab.bytes.size()) {
      vocab.bytes.resize(i + 1);
      vocab.spellings.resize(i + 1);
    }
    if (!vocab.spellings[i].empty())
      zt::fail(path + ":" + std::to_string(number) + ": rank " + std::to_string(rank) + " appears twice");
    vocab.bytes[i] = bytes;
    vocab.spellings[i] = byte_level::encode(bytes);
  }
  if (tokens == 0) zt::fail(path + ": no tokens (an empty tiktoken file)");
  if (rank_beyond_lines || tokens != vocab.bytes.size())
    zt::fail(path + ": the ranks are not 0.." + std::to_string(tokens - 1) +
             " without gaps, so the special tokens' ids after them would be ambiguous");
  auto bpe = std::make_unique<BytePairEncoder>(vocab.bytes, path);
  bpe->add_merges_from_ranks();
  bpe->set_whole_piece_lookup(true);

  AddedTokens added;
  auto next_id = static_cast<TokenId>(tokens);
  for (std::string_view content : kGlm4SpecialTokens) added.add(AddedToken{std::string(content), next_id++});
  for (const AddedToken& token : config.added_tokens)
    if (added.find_content(token.content) == nullptr) added.add(token);

  ByteLevelBpeOptions options;
  options.format = "tiktoken";
  options.pattern = std::string(kGlm4PretokenizerPattern);
  options.prefix = {added.find_content("[gMASK]")->id, added.find_content("<sop>")->id};
  auto tokenizer = std::make_unique<ByteLevelBpeTokenizer>(std::move(vocab), std::move(bpe), std::move(added),
                                                           std::move(options), path);
  apply_special_tokens(*tokenizer, config, {});
  return tokenizer;
}

}  // namespace zt::models
