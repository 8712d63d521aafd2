// ASCII lower case, for the names and words that are matched without regard to case: header
// names, URL schemes, option values ("AdamW", "auto", "GiB"). Bytes outside A-Z are kept, so
// UTF-8 text passes through unchanged.
#pragma once

#include <string>

namespace zt {

inline std::string ascii_lower(std::string text) {
  for (char& c : text)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return text;
}

}  // namespace zt
