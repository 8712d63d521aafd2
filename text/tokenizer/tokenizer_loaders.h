// One loader per tokenizer format; load_tokenizer() (tokenizer_load.cpp) picks among them.
// Each checks that its file is what it claims and names the file in every error, and sets
// the special ids from tokenizer_config.json.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "text/tokenizer/tokenizer.h"
#include "text/tokenizer/tokenizer_config.h"

namespace zt::models {

// HF tokenizers' tokenizer.json with a BPE model and a ByteLevel pre-tokenizer.
std::unique_ptr<Tokenizer> load_tokenizer_json(const std::string& path, const TokenizerConfig& config);
// The same from the file's text; `source` names it in errors.
std::unique_ptr<Tokenizer> parse_tokenizer_json(std::string_view text, const std::string& source,
                                                const TokenizerConfig& config);

// The slow tokenizers' vocab.json + merges.txt (Qwen2Tokenizer, GPT2Tokenizer).
std::unique_ptr<Tokenizer> load_vocab_and_merges(const std::string& vocab_path, const std::string& merges_path,
                                                 const TokenizerConfig& config);

// GLM-4's tiktoken-format tokenizer.model ("<base64 bytes> <rank>" lines); GLM-4's
// special tokens follow the vocabulary.
std::unique_ptr<Tokenizer> load_tiktoken(const std::string& path, const TokenizerConfig& config);
// The same from the file's text; `source` names it in errors.
std::unique_ptr<Tokenizer> parse_tiktoken(std::string_view text, const std::string& source,
                                          const TokenizerConfig& config);

// ChatGLM2/3's sentencepiece tokenizer.model; ChatGLM's special tokens follow the vocabulary.
std::unique_ptr<Tokenizer> load_sentencepiece(const std::string& path, const TokenizerConfig& config);

// True when the start of a tokenizer.model reads as tiktoken text rather than protobuf.
bool looks_like_tiktoken(std::string_view head);

}  // namespace zt::models
