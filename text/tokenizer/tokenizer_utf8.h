// UTF-8 checks and repairs shared by the tokenizers, and NFC normalisation (utf8proc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace zt::models::utf8 {

// Offset of the first byte that does not start a well-formed UTF-8 character, or
// text.size() when the text is valid.
std::size_t first_invalid_offset(std::string_view text);

// Throws "<what>: invalid UTF-8 at byte offset N (...)" unless `text` is valid.
void require_valid(std::string_view text, std::string_view what);

// `bytes` with every maximal ill-formed subsequence replaced by one U+FFFD, the Unicode
// recommendation that Rust's from_utf8_lossy (and so HF's ByteLevel decoder) follows.
std::string to_valid_lossy(std::string_view bytes);

// Length of the trailing bytes that start a character but do not finish it yet: what a
// streaming decoder must hold back (0 when `bytes` ends on a character boundary or with
// bytes that are already ill-formed).
std::size_t incomplete_tail(std::string_view bytes);

void append_codepoint(std::uint32_t codepoint, std::string& out);

// Reads the character at `pos` of valid UTF-8 and advances `pos`.
std::uint32_t next_codepoint(std::string_view text, std::size_t& pos);

// Canonical composition (NFC) of valid UTF-8. Text that NFC cannot change (ASCII, most CJK)
// is returned without calling into utf8proc.
std::string nfc(std::string_view text);

// True when NFC leaves `text` unchanged for certain (a quick check; false means "maybe").
bool nfc_stable(std::string_view text);

}  // namespace zt::models::utf8
