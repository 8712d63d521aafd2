// One tool-use conversation per family encoded with a real tokenizer of that family (the model's
// own template, and LLaMA-Factory's where it differs): ids where the family's own code puts them (template tokens by
// id, added tokens such as <tool_call> matched inside text, ChatGLM's pieces encoded one by one) and labels on exactly
// the assistant's answers, tool calls included, tool results not.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "runtime/error.h"
#include "tests/common/tokenizer_test_util.h"
#include "text/chat_template/chat_template.h"

namespace zt::models {
namespace {

namespace fs = std::filesystem;

// user, a call of get_weather, its result, the answer.
std::vector<ChatMessage> tool_round() {
  ChatMessage call{"assistant", ""};
  call.tool_calls = {{"get_weather", R"({"city": "Paris"})"}};
  return {{"user", "Weather in Paris?"}, call, {"tool", "17"}, {"assistant", "It is 17."}};
}

const ChatTools kTools = {
    R"({"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}})"};

// The texts of the runs of answer ids, decoded.
std::vector<std::string> answers(const Tokenizer& tok, const EncodedConversation& encoded) {
  std::vector<std::string> out;
  std::vector<TokenId> run;
  for (std::size_t i = 0; i <= encoded.ids.size(); ++i) {
    if (i < encoded.ids.size() && encoded.answer[i]) {
      run.push_back(encoded.ids[i]);
    } else if (!run.empty()) {
      out.push_back(tok.decode(run));
      run.clear();
    }
  }
  return out;
}

using testing::qwen_tokenizer_dir;

TEST(TemplateTokens, QwenToolCallsAndResultsWithTheQwenTokenizer) {
  if (!tokenizers_available() || qwen_tokenizer_dir().empty())
    GTEST_SKIP() << "no Qwen tokenizer: set ZT_QWEN_TOKENIZER_DIR to a folder with Qwen's tokenizer.json";
  const auto tok = load_tokenizer(qwen_tokenizer_dir());
  const std::string call =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
  for (const char* name : {"qwen", "qwen3"}) {
    const auto chat = make_model_chat_template(name);
    const EncodedConversation encoded = chat->encode(*tok, tool_round(), false, kTools);
    // No answer starts with whitespace, so the pieces encode as the whole text does.
    EXPECT_EQ(encoded.ids, tok->encode(chat->render(tool_round(), false, kTools), false)) << name;
    const std::string last = std::string(name) == "qwen3" ? "<think>\n\n</think>\n\nIt is 17." : "It is 17.";
    EXPECT_EQ(answers(*tok, encoded), (std::vector<std::string>{call + "<|im_end|>", last + "<|im_end|>"})) << name;
    // <tool_call> and <tool_response> are Qwen's added tokens, matched inside the text.
    const auto count = [&](TokenId id) { return std::count(encoded.ids.begin(), encoded.ids.end(), id); };
    EXPECT_EQ(count(151657), 3) << name;  // <tool_call>: the call, and twice in the system turn's instructions
    EXPECT_EQ(count(151665), 1) << name;  // <tool_response>
  }
}

TEST(TemplateTokens, Glm4ToolCallWithGlm4Tokens) {
  if (!tokenizers_available()) GTEST_SKIP() << "built without the text libraries";
  const auto tok = load_tokenizer((fs::path(ZT_SOURCE_DIR) / "tests/data/tokenizer/tiny_tiktoken").string());
  const EncodedConversation encoded = make_model_chat_template("glm4")->encode(*tok, tool_round(), false);
  // tiny_tiktoken's GLM-4 specials: <|endoftext|> 260, [gMASK] 262, <sop> 264, <|user|> 267,
  // <|assistant|> 268, <|observation|> 269.
  std::vector<TokenId> expected = {262, 264, 267};
  std::vector<bool> answer = {false, false, false};
  auto text = [&](const std::string& s, bool is_answer) {
    for (TokenId id : tok->encode(s, false)) {
      expected.push_back(id);
      answer.push_back(is_answer);
    }
  };
  auto token = [&](TokenId id, bool is_answer) {
    expected.push_back(id);
    answer.push_back(is_answer);
  };
  text("\nWeather in Paris?", false);
  token(268, false);
  text("get_weather\n{\"city\": \"Paris\"}", true);
  token(269, true);
  text("\n17", false);
  token(268, false);
  text("\nIt is 17.", true);
  token(260, true);
  EXPECT_EQ(encoded.ids, expected);
  EXPECT_EQ(encoded.answer, answer);
}

// LLaMA-Factory's glm4 (--template glm4): the same ids as GLM-4's own template, but the
// supervised labels put eos where the model's answer ends: on <|observation|> after the call
// (efficient_eos), and the final eos.
TEST(TemplateTokens, LlamaFactoryGlm4LabelsEosAfterEachAnswer) {
  if (!tokenizers_available()) GTEST_SKIP() << "built without the text libraries";
  const auto tok = load_tokenizer((fs::path(ZT_SOURCE_DIR) / "tests/data/tokenizer/tiny_tiktoken").string());
  const EncodedConversation encoded = make_chat_template("glm4")->encode(*tok, tool_round(), false);
  std::vector<TokenId> ids = {262, 264, 267};
  std::vector<std::int64_t> labels(3, -100);
  auto text = [&](const std::string& s, bool trained) {
    for (TokenId id : tok->encode(s, false)) {
      ids.push_back(id);
      labels.push_back(trained ? id : -100);
    }
  };
  text("\nWeather in Paris?", false);
  ids.push_back(268);
  labels.push_back(-100);
  text("get_weather\n{\"city\": \"Paris\"}", true);
  ids.push_back(269);
  labels.push_back(260);  // <|observation|> labelled <|endoftext|>
  text("\n17", false);
  ids.push_back(268);
  labels.push_back(-100);
  text("\nIt is 17.", true);
  ids.push_back(260);
  labels.push_back(260);
  EXPECT_EQ(encoded.ids, ids);
  EXPECT_EQ(encoded.labels(), labels);
  EXPECT_EQ(encoded.kept_tail, 1u);
}

// LLaMA-Factory's qwen3: get_thought_word_ids encodes the empty thought by itself, so an answer
// starting with newlines is not joined to its "\n\n" as the whole rendered text would be.
TEST(TemplateTokens, LlamaFactoryQwen3EncodesTheEmptyThoughtApart) {
  if (!tokenizers_available() || qwen_tokenizer_dir().empty())
    GTEST_SKIP() << "no Qwen tokenizer: set ZT_QWEN_TOKENIZER_DIR to a folder with Qwen's tokenizer.json";
  const auto tok = load_tokenizer(qwen_tokenizer_dir());
  const auto chat = make_chat_template("qwen3");
  const std::vector<ChatMessage> messages = {{"user", "Hi"}, {"assistant", "\n\nHello"}};
  const TokenId start = *tok->token_to_id("<|im_start|>"), end = *tok->token_to_id("<|im_end|>");
  std::vector<TokenId> expected;
  auto add = [&](const std::vector<TokenId>& more) { expected.insert(expected.end(), more.begin(), more.end()); };
  add({start});
  add(tok->encode("user\nHi", false));
  add({end});
  add(tok->encode("\n", false));
  add({start});
  add(tok->encode("assistant\n", false));
  add(tok->encode("<think>\n\n</think>\n\n", false));
  add(tok->encode("\n\nHello", false));
  add({end});
  add(tok->encode("\n", false));
  const EncodedConversation encoded = chat->encode(*tok, messages, false);
  EXPECT_EQ(encoded.ids, expected);
  EXPECT_NE(encoded.ids, tok->encode(chat->render(messages, false), false));
}

#if ZT_HAVE_TEXT
// A ChatGLM2/3-style sentencepiece model trained here; expected ids come from
// libsentencepiece itself, one piece at a time as ChatGLM's build_single_message encodes.
class ChatGlmTokens : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("zt_chatglm_tokens_" + std::to_string(::getpid()));
    testing::train_sentencepiece({"Weather in Paris? It is 17.", "get_weather tool_call city='Paris'",
                                  "```python\nprint(1)\n```", "你好，天气怎么样？"},
                                 600, dir_, sp_);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  std::vector<TokenId> piece(const std::string& text) const {
    std::vector<int> ids;
    EXPECT_TRUE(sp_.Encode(text, &ids).ok());
    return {ids.begin(), ids.end()};
  }
  // ChatGLM's specials follow the vocabulary: [gMASK] n+1, sop n+3, <|user|> n+6,
  // <|assistant|> n+7, <|observation|> n+8.
  TokenId special(int offset) const { return sp_.GetPieceSize() + offset; }

  // Expected ids with their labels (-100 where untrained), built piece by piece.
  struct Expected {
    std::vector<TokenId> ids;
    std::vector<std::int64_t> labels;
    void add(const std::vector<TokenId>& more, bool trained) {
      for (TokenId id : more) {
        ids.push_back(id);
        labels.push_back(trained ? id : -100);
      }
    }
    std::vector<bool> answer() const {
      std::vector<bool> out;
      for (std::int64_t label : labels) out.push_back(label != -100);
      return out;
    }
  };
  // tool_round() up to the call, as both chatglm3 templates encode it: [gMASK] sop <|user|>,
  // the question, <|assistant|>.
  Expected question() const {
    Expected expected;
    expected.add({special(1), special(3), special(6)}, false);
    expected.add(piece("\n"), false);
    expected.add(piece("Weather in Paris?"), false);
    expected.add({special(7)}, false);
    return expected;
  }
  // The rest after the call's <|observation|>: the result, <|assistant|>, the answer, eos.
  void add_result_and_answer(Expected& expected) const {
    expected.add(piece("\n"), false);
    expected.add(piece("17"), false);
    expected.add({special(7)}, false);
    expected.add(piece("\n"), true);
    expected.add(piece("It is 17."), true);
    expected.add({sp_.eos_id()}, true);
  }

  static inline fs::path dir_;
  static inline sentencepiece::SentencePieceProcessor sp_;
};

TEST_F(ChatGlmTokens, Chatglm3ToolCallAsItsFineTuningCodeEncodesIt) {
  const auto tok = load_tokenizer(dir_.string());
  const EncodedConversation encoded = make_model_chat_template("chatglm3")->encode(*tok, tool_round(), false);
  Expected expected = question();
  expected.add(piece("get_weather\n"), true);
  expected.add(piece("```python\ntool_call(city='Paris')\n```"), true);
  expected.add({special(8)}, true);
  add_result_and_answer(expected);
  EXPECT_EQ(encoded.ids, expected.ids);
  EXPECT_EQ(encoded.answer, expected.answer());
}

// LLaMA-Factory's chatglm3: {"token": ...} slots, "\n" and the content encoded apart, a call
// in GLM-4's format as one piece, eos labelled on <|observation|> and appended at the end.
TEST_F(ChatGlmTokens, LlamaFactoryChatglm3EncodesEachElementApart) {
  const auto tok = load_tokenizer(dir_.string());
  ASSERT_EQ(tok->special_ids().eos, sp_.eos_id());
  const EncodedConversation encoded = make_chat_template("chatglm3")->encode(*tok, tool_round(), false);
  Expected expected = question();
  expected.add(piece("get_weather\n{\"city\": \"Paris\"}"), true);
  expected.ids.push_back(special(8));
  expected.labels.push_back(sp_.eos_id());  // <|observation|> labelled eos
  add_result_and_answer(expected);
  EXPECT_EQ(encoded.ids, expected.ids);
  EXPECT_EQ(encoded.labels(), expected.labels);
}

TEST_F(ChatGlmTokens, Chatglm2TrainsTheLastAnswerAndRefusesTools) {
  const auto tok = load_tokenizer(dir_.string());
  const auto chat = make_model_chat_template("chatglm2");
  const EncodedConversation encoded = chat->encode(
      *tok, {{"user", "你好"}, {"assistant", "Weather"}, {"user", "Paris?"}, {"assistant", "It is 17."}}, false);
  std::vector<TokenId> expected = {special(1), special(3)};
  for (TokenId id : piece("[Round 1]\n\n问：你好\n\n答：Weather\n\n[Round 2]\n\n问：Paris?\n\n答："))
    expected.push_back(id);
  const std::size_t prompt = expected.size();
  for (TokenId id : piece("It is 17.")) expected.push_back(id);
  expected.push_back(sp_.eos_id());
  EXPECT_EQ(encoded.ids, expected);
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(encoded.answer[i], i >= prompt) << i;
  EXPECT_THROW(chat->encode(*tok, tool_round(), false), Error);
}
#endif

}  // namespace
}  // namespace zt::models
