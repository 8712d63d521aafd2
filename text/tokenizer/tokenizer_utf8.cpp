#include "text/tokenizer/tokenizer_utf8.h"

#include <cstdlib>
#include <memory>
#include <vector>

#include "runtime/error.h"
#include "text/tokenizer/tokenizer.h"

#if ZT_HAVE_TEXT
#include <utf8proc.h>
#endif

namespace zt::models::utf8 {
namespace {

enum class Unit { kValid, kIllFormed, kTruncated };

// Classifies the bytes at `pos` as one well-formed character, one maximal ill-formed
// subsequence, or the start of a character cut off by the end of the text; `length` is
// how many bytes that is.
Unit scan_unit(std::string_view s, std::size_t pos, std::size_t& length) {
  const auto b0 = static_cast<unsigned char>(s[pos]);
  length = 1;
  if (b0 < 0x80) return Unit::kValid;
  std::size_t need = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the range allowed for the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
  } else if (b0 == 0xE0) {
    need = 2, lo = 0xA0;
  } else if ((b0 >= 0xE1 && b0 <= 0xEC) || b0 == 0xEE || b0 == 0xEF) {
    need = 2;
  } else if (b0 == 0xED) {
    need = 2, hi = 0x9F;  // excludes the UTF-16 surrogates
  } else if (b0 == 0xF0) {
    need = 3, lo = 0x90;
  } else if (b0 >= 0xF1 && b0 <= 0xF3) {
    need = 3;
  } else if (b0 == 0xF4) {
    need = 3, hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return Unit::kIllFormed;
  }
  for (std::size_t k = 1; k <= need; ++k) {
    if (pos + k >= s.size()) {
      length = k;
      return Unit::kTruncated;
    }
    const auto b = static_cast<unsigned char>(s[pos + k]);
    const unsigned char min = k == 1 ? lo : 0x80, max = k == 1 ? hi : 0xBF;
    if (b < min || b > max) {
      length = k;
      return Unit::kIllFormed;
    }
  }
  length = need + 1;
  return Unit::kValid;
}

std::string hex_byte(unsigned char b) {
  const char* digits = "0123456789ABCDEF";
  return std::string("0x") + digits[b >> 4] + digits[b & 15];
}

}  // namespace

std::size_t first_invalid_offset(std::string_view text) {
  std::size_t pos = 0, length = 0;
  while (pos < text.size()) {
    if (static_cast<unsigned char>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    if (scan_unit(text, pos, length) != Unit::kValid) return pos;
    pos += length;
  }
  return text.size();
}

void require_valid(std::string_view text, std::string_view what) {
  const std::size_t bad = first_invalid_offset(text);
  if (bad == text.size()) return;
  zt::fail(std::string(what) + ": invalid UTF-8 at byte offset " + std::to_string(bad) + " (byte " +
           hex_byte(static_cast<unsigned char>(text[bad])) +
           "); tokenizers take UTF-8 text: convert the input's encoding first");
}

std::string to_valid_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t pos = 0, length = 0;
  while (pos < bytes.size()) {
    if (scan_unit(bytes, pos, length) == Unit::kValid)
      out.append(bytes.substr(pos, length));
    else
      out.append("\xEF\xBF\xBD");
    pos += length;
  }
  return out;
}

std::size_t incomplete_tail(std::string_view bytes) {
  // A character is at most 4 bytes, so only the last 3 can start an unfinished one.
  const std::size_t from = bytes.size() > 3 ? bytes.size() - 3 : 0;
  for (std::size_t start = from; start < bytes.size(); ++start) {
    const auto b = static_cast<unsigned char>(bytes[start]);
    if (b < 0xC0) continue;  // not a lead byte
    std::size_t length = 0;
    if (scan_unit(bytes, start, length) == Unit::kTruncated) return bytes.size() - start;
  }
  return 0;
}

void append_codepoint(std::uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::uint32_t next_codepoint(std::string_view text, std::size_t& pos) {
  const auto b0 = static_cast<unsigned char>(text[pos]);
  if (b0 < 0x80) {
    ++pos;
    return b0;
  }
  const std::size_t length = b0 >= 0xF0 ? 4 : b0 >= 0xE0 ? 3 : 2;
  std::uint32_t cp = b0 & (0x7F >> length);
  for (std::size_t k = 1; k < length; ++k) cp = (cp << 6) | (static_cast<unsigned char>(text[pos + k]) & 0x3F);
  pos += length;
  return cp;
}

#if ZT_HAVE_TEXT
namespace {

// One bit per code point: set when NFC might change a text containing it. A text of only
// unset code points is already NFC: none decomposes canonically, all are starters, and none
// can be the second half of a composition.
class NfcMaybeTable {
 public:
  NfcMaybeTable() : bits_((0x110000 + 63) / 64, 0) {
    for (std::uint32_t cp = 0x80; cp < 0x110000; ++cp) {
      const utf8proc_property_t* p = utf8proc_get_property(static_cast<utf8proc_int32_t>(cp));
      const bool canonical_decomposition = p->decomp_seqindex != UINT16_MAX && p->decomp_type == 0;
      const bool composes_as_second = p->comb_index != UINT16_MAX && p->comb_index >= 0x8000;
      // Hangul vowel and trailing jamo compose algorithmically, outside utf8proc's tables.
      const bool hangul_jamo = (cp >= 0x1161 && cp <= 0x1175) || (cp >= 0x11A8 && cp <= 0x11C2);
      if (p->combining_class != 0 || canonical_decomposition || composes_as_second || hangul_jamo)
        bits_[cp >> 6] |= std::uint64_t{1} << (cp & 63);
    }
  }
  bool maybe(std::uint32_t cp) const { return (bits_[cp >> 6] >> (cp & 63)) & 1; }

 private:
  std::vector<std::uint64_t> bits_;
};

const NfcMaybeTable& nfc_table() {
  static const NfcMaybeTable table;
  return table;
}

}  // namespace

bool nfc_stable(std::string_view text) {
  std::size_t pos = 0;
  while (pos < text.size() && static_cast<unsigned char>(text[pos]) < 0x80) ++pos;
  if (pos == text.size()) return true;
  const NfcMaybeTable& table = nfc_table();
  while (pos < text.size())
    if (table.maybe(next_codepoint(text, pos))) return false;
  return true;
}

std::string nfc(std::string_view text) {
  if (nfc_stable(text)) return std::string(text);
  utf8proc_uint8_t* mapped = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()), static_cast<utf8proc_ssize_t>(text.size()),
                   &mapped, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) zt::fail(std::string("NFC normalisation failed: ") + utf8proc_errmsg(n));
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owner(mapped, &std::free);
  return std::string(reinterpret_cast<const char*>(mapped), static_cast<std::size_t>(n));
}
#else
bool nfc_stable(std::string_view) { zt::fail(tokenizer_support_message()); }
std::string nfc(std::string_view) { zt::fail(tokenizer_support_message()); }
#endif

}  // namespace zt::models::utf8
