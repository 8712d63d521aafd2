#include "text/tokenizer/tokenizer_regex.h"

#include "runtime/error.h"
#include "text/tokenizer/tokenizer.h"

#if ZT_HAVE_TEXT
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#endif

namespace zt::models {
namespace {

// Unicode White_Space, as the members of a character class.
constexpr std::string_view kWhiteSpaceMembers =
    R"(\t\n\x{0B}\f\r\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";

}  // namespace

std::string PretokenizerRegex::translate(std::string_view pattern, const std::string& source) {
  std::string out;
  bool in_class = false;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[++i];
      if (e == 's') {
        out += in_class ? std::string(kWhiteSpaceMembers) : "[" + std::string(kWhiteSpaceMembers) + "]";
      } else if (e == 'S') {
        if (in_class)
          zt::fail(source +
                   ": the pre-tokenizer regex uses \\S inside a character class, which zerotune "
                   "does not translate; write the class with \\s negated instead");
        out += "[^" + std::string(kWhiteSpaceMembers) + "]";
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a member, not the end of the class.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
      continue;
    }
    if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

#if ZT_HAVE_TEXT
namespace {

// Match data and JIT stack are per thread, so one compiled regex serves many threads.
struct MatchScratch {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
  MatchScratch() { pcre2_jit_stack_assign(context, nullptr, stack); }
  ~MatchScratch() {
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
};

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof(buffer));
  return reinterpret_cast<const char*>(buffer);
}

}  // namespace

PretokenizerRegex::PretokenizerRegex(std::string_view pattern, std::string source) : source_(std::move(source)) {
  const std::string translated = translate(pattern, source_);
  int error = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error, &error_offset, nullptr);
  if (code == nullptr)
    zt::fail(source_ + ": the pre-tokenizer regex does not compile (" + pcre2_message(error) + " at offset " +
             std::to_string(error_offset) + " of '" + translated + "')");
  code_ = code;
  jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
}

PretokenizerRegex::~PretokenizerRegex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

void PretokenizerRegex::split(std::string_view text, std::vector<std::string_view>& pieces) const {
  thread_local MatchScratch scratch;
  auto* code = static_cast<pcre2_code*>(code_);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t kept = 0, offset = 0;
  while (offset < text.size()) {
    const int rc =
        jit_ ? pcre2_jit_match(code, subject, text.size(), offset, 0, scratch.data, scratch.context)
             : pcre2_match(code, subject, text.size(), offset, PCRE2_NO_UTF_CHECK, scratch.data, scratch.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0)
      zt::fail(source_ + ": the pre-tokenizer regex failed on a text of " + std::to_string(text.size()) +
               " bytes: " + pcre2_message(rc));
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(scratch.data);
    const std::size_t start = ovector[0], end = ovector[1];
    if (start > kept) {
      pieces.push_back(text.substr(kept, start - kept));
      kept = start;  // an empty match splits here too, as HF's Split does
    }
    if (end > start) {
      pieces.push_back(text.substr(start, end - start));
      kept = offset = end;
    } else {
      // An empty match: step over one character so the search moves on.
      offset = start + 1;
      while (offset < text.size() && (static_cast<unsigned char>(text[offset]) & 0xC0) == 0x80) ++offset;
    }
  }
  if (kept < text.size()) pieces.push_back(text.substr(kept));
}
#else
PretokenizerRegex::PretokenizerRegex(std::string_view, std::string source) : source_(std::move(source)) {
  zt::fail(tokenizer_support_message());
}
PretokenizerRegex::~PretokenizerRegex() = default;
void PretokenizerRegex::split(std::string_view, std::vector<std::string_view>&) const {
  zt::fail(tokenizer_support_message());
}
#endif

}  // namespace zt::models
