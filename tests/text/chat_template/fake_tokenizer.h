// A tokenizer for chat template tests that makes every encode call visible: encode(text) is
// [999, bytes of text...], template tokens have ids from a fixed table, eos is <|endoftext|>.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "text/chat_template/chat_template.h"

namespace zt::models {

constexpr TokenId kPieceStart = 999;  // FakeTokenizer opens every encode call's output with it

// encode(text) = [999, bytes of text...]; template tokens have ids from a fixed table.
class FakeTokenizer final : public Tokenizer {
 public:
  FakeTokenizer() : Tokenizer("fake tokenizer") {
    set_special_ids({.bos = std::nullopt, .eos = 1010, .pad = std::nullopt});
  }
  std::vector<TokenId> encode(std::string_view text, bool) const override {
    std::vector<TokenId> ids = {kPieceStart};
    for (char c : text) ids.push_back(static_cast<unsigned char>(c));
    return ids;
  }
  void append_token_bytes(TokenId, bool, DecodeState&, std::string&) const override {}
  std::optional<TokenId> token_to_id(std::string_view token) const override {
    auto it = tokens.find(std::string(token));
    if (it == tokens.end()) return std::nullopt;
    return it->second;
  }
  std::string id_to_token(TokenId) const override { return {}; }
  std::int64_t vocab_size() const override { return 2000; }
  bool is_special(TokenId) const override { return false; }
  std::string_view format() const override { return "fake"; }

  std::map<std::string, TokenId> tokens = {{"<|im_start|>", 1001},  {"<|im_end|>", 1002},     {"[gMASK]", 1003},
                                           {"sop", 1004},           {"<sop>", 1005},          {"<|system|>", 1006},
                                           {"<|user|>", 1007},      {"<|assistant|>", 1008},  {"</s>", 1009},
                                           {"<|endoftext|>", 1010}, {"<|observation|>", 1011}};
};

// What one encode call of `text` gives, with every id marked as answer or not.
struct Expected {
  std::vector<TokenId> ids;
  std::vector<bool> answer;
  Expected& piece(const std::string& text, bool is_answer = false) {
    ids.push_back(kPieceStart);
    for (char c : text) ids.push_back(static_cast<unsigned char>(c));
    answer.resize(ids.size(), is_answer);
    return *this;
  }
  Expected& token(TokenId id, bool is_answer = false) {
    ids.push_back(id);
    answer.push_back(is_answer);
    return *this;
  }
  // How the GLM templates open: [gMASK], `sop` (ChatGLM3's sop 1004, GLM-4's <sop> 1005),
  // <|user|>; untrained.
  Expected& glm_start(TokenId sop) { return token(1003).token(sop).token(1007); }
  // A ChatML turn as Qwen's templates encode it, untrained: <|im_start|>, `text` ("user\nU"),
  // <|im_end|>, "\n".
  Expected& chatml_turn(const std::string& text) { return token(1001).piece(text).token(1002).piece("\n"); }
  // A ChatML answer: <|im_start|> and `prompt` ("assistant\n") untrained, `text` and <|im_end|>
  // trained, "\n" not.
  Expected& chatml_answer(const std::string& prompt, const std::string& text) {
    return token(1001).piece(prompt).piece(text, true).token(1002, true).piece("\n");
  }
};

}  // namespace zt::models
