// The pre-tokenizer split of HF's tokenizers: a regex (written for Oniguruma, as
// tokenizer.json stores it) cuts text into pieces, and what lies between matches is kept as
// pieces too ("Isolated"). PCRE2 runs it in UTF + UCP mode, JIT-compiled where available.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace zt::models {

class PretokenizerRegex {
 public:
  // `source` names where the pattern came from in errors.
  PretokenizerRegex(std::string_view pattern, std::string source);
  ~PretokenizerRegex();
  PretokenizerRegex(const PretokenizerRegex&) = delete;
  PretokenizerRegex& operator=(const PretokenizerRegex&) = delete;

  // Appends the pieces of valid UTF-8 `text`, in order; they concatenate back to `text`.
  void split(std::string_view text, std::vector<std::string_view>& pieces) const;

  // Rewrites Oniguruma's \s and \S (Unicode White_Space, which includes U+0085) as explicit
  // classes, since PCRE2's \s leaves U+0085 out.
  static std::string translate(std::string_view oniguruma_pattern, const std::string& source);

 private:
  void* code_ = nullptr;  // pcre2_code_8
  bool jit_ = false;
  std::string source_;
};

// Qwen2/2.5/3's pattern (digits one at a time) and GLM-4's (up to three digits together).
inline constexpr std::string_view kQwenPretokenizerPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
inline constexpr std::string_view kGlm4PretokenizerPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// GPT-2's, used by the ByteLevel pre-tokenizer when use_regex is true.
inline constexpr std::string_view kGpt2PretokenizerPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

}  // namespace zt::models
