// tokenizer_config.json: which tokens are bos/eos/pad, the added tokens transformers
// registers (added_tokens_decoder), the tokenizer class and the chat template.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/tokenizer/added_tokens.h"
#include "text/tokenizer/tokenizer.h"

namespace zt::models {

// A special token the file names (a string, or an {"content": ...} object); `named` is
// false when the key is absent, and `content` empty when it is null.
struct NamedToken {
  bool named = false;
  std::optional<std::string> content;
};

struct TokenizerConfig {
  std::string source;  // the file, or empty when the folder has none
  NamedToken bos, eos, pad;
  std::vector<AddedToken> added_tokens;
  std::string tokenizer_class;
  std::string chat_template;  // the template named "default" when the file keeps several
};

// Reads <model_dir>/tokenizer_config.json; an absent file gives an empty config.
TokenizerConfig read_tokenizer_config(const std::string& model_dir);
// The same from the file's text; `source` names it in errors and becomes config.source.
TokenizerConfig parse_tokenizer_config(std::string_view text, const std::string& source);

// Sets the tokenizer's bos/eos/pad from the names in `config`, falling back to `defaults`
// for names the file leaves out. A named token the vocabulary lacks is an error.
void apply_special_tokens(Tokenizer& tokenizer, const TokenizerConfig& config, const SpecialTokenIds& defaults);

}  // namespace zt::models
