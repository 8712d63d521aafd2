// GPT-2's reversible map from bytes to printable characters, which byte-level BPE
// vocabularies (Qwen, GLM-4's tokenizer.json) are written in: "Ġ" is the space byte.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace zt::models::byte_level {

// The UTF-8 of the character that stands for `byte`.
const std::string& char_for_byte(std::uint8_t byte);

// `bytes` spelled in the byte-level alphabet ("Ġhello" for " hello").
std::string encode(std::string_view bytes);

// The bytes a byte-level token stands for. False (and `bytes` unspecified) when `token`
// holds a character outside the alphabet.
bool decode(std::string_view token, std::string& bytes);

}  // namespace zt::models::byte_level
