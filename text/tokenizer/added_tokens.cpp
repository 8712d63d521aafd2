#include "text/tokenizer/added_tokens.h"

#include <algorithm>

#include "text/tokenizer/tokenizer_utf8.h"

namespace zt::models {
namespace {

// Rust's char::is_whitespace over UTF-8 (White_Space), for lstrip/rstrip.
bool is_whitespace(std::uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

// What counts as a word character for single_word: letters, digits and '_' in ASCII; any
// non-ASCII non-space character is treated as part of a word (HF uses Unicode
// alphanumerics; text with single_word tokens next to symbols may differ).
bool is_word_char(std::uint32_t cp) {
  if (cp < 0x80) return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || cp == '_';
  return !is_whitespace(cp);
}

std::uint32_t last_codepoint(std::string_view text, std::size_t end, std::size_t& start) {
  start = end - 1;
  while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
  std::size_t pos = start;
  return utf8::next_codepoint(text, pos);
}

}  // namespace

void AddedTokens::add(AddedToken token) {
  auto same =
      std::find_if(tokens_.begin(), tokens_.end(), [&](const AddedToken& t) { return t.content == token.content; });
  if (same != tokens_.end())
    *same = std::move(token);
  else
    tokens_.push_back(std::move(token));
  rebuild();
}

void AddedTokens::rebuild() {
  raw_ = Matcher{};
  normalized_ = Matcher{};
  index_by_id_.assign(static_cast<std::size_t>(id_end()), -1);
  for (std::size_t i = 0; i < tokens_.size(); ++i) {
    const AddedToken& t = tokens_[i];
    index_by_id_[static_cast<std::size_t>(t.id)] = static_cast<std::int32_t>(i);
    if (t.content.empty()) continue;
    Matcher& m = t.normalized ? normalized_ : raw_;
    m.first_byte[static_cast<unsigned char>(t.content[0])] = true;
    m.by_length.push_back(i);
  }
  for (Matcher* m : {&raw_, &normalized_})
    std::stable_sort(m->by_length.begin(), m->by_length.end(), [&](std::size_t a, std::size_t b) {
      return tokens_[a].content.size() > tokens_[b].content.size();
    });
}

const AddedToken* AddedTokens::find_id(TokenId id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= index_by_id_.size() || index_by_id_[id] < 0) return nullptr;
  return &tokens_[static_cast<std::size_t>(index_by_id_[id])];
}

const AddedToken* AddedTokens::find_content(std::string_view content) const {
  for (const AddedToken& t : tokens_)
    if (t.content == content) return &t;
  return nullptr;
}

TokenId AddedTokens::id_end() const {
  TokenId end = 0;
  for (const AddedToken& t : tokens_) end = std::max(end, t.id + 1);
  return end;
}

std::size_t AddedTokens::match_at(const Matcher& m, std::string_view text, std::size_t pos) const {
  for (std::size_t index : m.by_length) {
    const std::string& content = tokens_[index].content;
    if (text.compare(pos, content.size(), content) == 0) return index;
  }
  return tokens_.size();
}

void AddedTokens::split(std::string_view text, bool normalized, std::vector<TextPiece>& out) const {
  const Matcher& m = normalized ? normalized_ : raw_;
  if (m.by_length.empty()) {
    if (!text.empty()) out.push_back({text, -1});
    return;
  }
  std::size_t kept = 0;  // text before this is already in `out`
  std::size_t pos = 0;
  while (pos < text.size()) {
    if (!m.first_byte[static_cast<unsigned char>(text[pos])]) {
      ++pos;
      continue;
    }
    const std::size_t index = match_at(m, text, pos);
    if (index == tokens_.size()) {
      ++pos;
      continue;
    }
    const AddedToken& token = tokens_[index];
    std::size_t start = pos, stop = pos + token.content.size();
    if (token.single_word) {
      std::size_t before = 0, after = stop;
      const bool word_before = start > 0 && is_word_char(last_codepoint(text, start, before));
      const bool word_after = stop < text.size() && is_word_char(utf8::next_codepoint(text, after));
      if (word_before || word_after) {
        pos = stop;  // HF's matcher resumes after a refused match
        continue;
      }
    }
    if (token.lstrip) {
      std::size_t before = start;
      while (before > kept) {
        std::size_t char_start = 0;
        if (!is_whitespace(last_codepoint(text, before, char_start))) break;
        before = char_start;
      }
      start = before;
    }
    if (token.rstrip) {
      std::size_t after = stop;
      while (after < text.size()) {
        std::size_t next = after;
        if (!is_whitespace(utf8::next_codepoint(text, next))) break;
        after = next;
      }
      stop = after;
    }
    if (start > kept) out.push_back({text.substr(kept, start - kept), -1});
    out.push_back({text.substr(start, stop - start), token.id});
    kept = pos = stop;
  }
  if (kept < text.size()) out.push_back({text.substr(kept), -1});
}

}  // namespace zt::models
