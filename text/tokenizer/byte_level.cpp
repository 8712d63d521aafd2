#include "text/tokenizer/byte_level.h"

#include <array>

#include "text/tokenizer/tokenizer_utf8.h"

namespace zt::models::byte_level {
namespace {

// Printable Latin-1 bytes stand for themselves; the other 68 take the code points from
// U+0100 upwards, in byte order.
struct Alphabet {
  std::array<std::uint32_t, 256> codepoint_of_byte{};
  std::array<std::string, 256> utf8_of_byte;
  std::array<std::int16_t, 324> byte_of_codepoint{};  // -1: not in the alphabet

  Alphabet() {
    byte_of_codepoint.fill(-1);
    std::uint32_t next = 256;
    for (std::uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      codepoint_of_byte[b] = printable ? b : next++;
      byte_of_codepoint[codepoint_of_byte[b]] = static_cast<std::int16_t>(b);
      utf8::append_codepoint(codepoint_of_byte[b], utf8_of_byte[b]);
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet instance;
  return instance;
}

}  // namespace

const std::string& char_for_byte(std::uint8_t byte) { return alphabet().utf8_of_byte[byte]; }

std::string encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += char_for_byte(static_cast<std::uint8_t>(c));
  return out;
}

bool decode(std::string_view token, std::string& bytes) {
  bytes.clear();
  if (utf8::first_invalid_offset(token) != token.size()) return false;
  const Alphabet& a = alphabet();
  std::size_t pos = 0;
  while (pos < token.size()) {
    const std::uint32_t cp = utf8::next_codepoint(token, pos);
    if (cp >= a.byte_of_codepoint.size() || a.byte_of_codepoint[cp] < 0) return false;
    bytes.push_back(static_cast<char>(a.byte_of_codepoint[cp]));
  }
  return true;
}

}  // namespace zt::models::byte_level
