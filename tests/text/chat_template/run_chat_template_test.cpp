// The template a run uses (make_run_chat_template) under LLaMA-Factory's enable_thinking, as an
// arguments file sets it: --template qwen3 renders what LLaMA-Factory's ReasoningTemplate renders
// for false (every thought removed from the answers, the empty thought in the prompt) and null;
// a Qwen3 model's own template with false renders what Qwen3's Jinja renders given
// enable_thinking=False (tests/data/chat_templates/qwen3.expected.json, from transformers);
// templates without thinking ignore it, as LLaMA-Factory's plain Template does.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/common/process_test_util.h"
#include "text/chat_template/chat_template.h"
#include "train/args/training_arguments.h"

namespace zt::models {
namespace {

namespace fs = std::filesystem;

const std::vector<ChatMessage> kThinking = {
    {"user", "q1"}, {"assistant", "<think>\nr1\n</think>\n\na1"}, {"user", "q2"}, {"assistant", "a2"}};
const std::string kEmptyThought = "<think>\n\n</think>\n\n";

// What an arguments file's enable_thinking becomes in the template's options.
ChatTemplateOptions options_of(const std::string& yaml_line) {
  const train::TrainingArguments args = train::parse_training_arguments_text(
      "model_name_or_path: m\noutput_dir: o\ntrain_file: t.json\ntemplate: qwen3\n" + yaml_line,
      train::ArgumentsFileFormat::kYaml, "args.yaml", {});
  return {.enable_thinking = args.enable_thinking};
}

TEST(RunChatTemplate, EnableThinkingFromAnArgumentsFile) {
  EXPECT_EQ(options_of("").enable_thinking, std::optional<bool>(true));  // LLaMA-Factory's default
  EXPECT_EQ(options_of("enable_thinking: false\n").enable_thinking, std::optional<bool>(false));
  EXPECT_EQ(options_of("enable_thinking: null\n").enable_thinking, std::nullopt);
  EXPECT_EQ(options_of("enable_thinking: ~\n").enable_thinking, std::nullopt);
  const train::TrainingArguments flags = train::parse_training_arguments(
      {"--model_name_or_path", "m", "--output_dir", "o", "--train_file", "t.json", "--enable_thinking", "false"});
  EXPECT_EQ(flags.enable_thinking, std::optional<bool>(false));
}

TEST(RunChatTemplate, NamedQwen3RendersLlamaFactorysThinkingRules) {
  const std::string conversation = "<|im_start|>user\nq1<|im_end|>\n<|im_start|>assistant\n" + kEmptyThought +
                                   "a1<|im_end|>\n<|im_start|>user\nq2<|im_end|>\n<|im_start|>assistant\n" +
                                   kEmptyThought + "a2<|im_end|>\n";
  // false: the given thought is removed and every answer starts with the empty one.
  const auto off = make_run_chat_template("qwen3", "no-model-needed", options_of("enable_thinking: false\n"));
  EXPECT_EQ(off->render(kThinking, false), conversation);
  // ... which is part of the prompt, not of what is trained.
  std::string trained;
  for (const ChatPart& part : off->parts(kThinking, false, {}))
    if (part.answer) trained += part.text;
  EXPECT_EQ(trained, "a1<|im_end|>\na2<|im_end|>\n");
  EXPECT_EQ(off->render({{"user", "Hi"}}, true),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n" + kEmptyThought);
  // true (the default): the thought given is kept and trained; no empty thought in a prompt.
  const auto on = make_run_chat_template("qwen3", "no-model-needed", options_of(""));
  EXPECT_NE(on->render(kThinking, false).find("<think>\nr1\n</think>"), std::string::npos);
  EXPECT_EQ(on->render({{"user", "Hi"}}, true), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  // null: the thought given is kept, the empty one still prompts.
  const auto null = make_run_chat_template("qwen3", "no-model-needed", options_of("enable_thinking: null\n"));
  EXPECT_NE(null->render(kThinking, false).find("<think>\nr1\n</think>"), std::string::npos);
  // A template without thinking renders the same either way.
  EXPECT_EQ(make_run_chat_template("qwen", "", {.enable_thinking = false})->render(kThinking, false),
            make_run_chat_template("qwen", "", {})->render(kThinking, false));
}

class RunChatTemplateOfModel : public testing::FolderTest {};

TEST_F(RunChatTemplateOfModel, Qwen3sOwnTemplateFollowsEnableThinkingAsItsJinjaDoes) {
  std::ifstream jinja(fs::path(ZT_SOURCE_DIR) / "tests/data/chat_templates/qwen3.jinja");
  const std::string text{std::istreambuf_iterator<char>(jinja), std::istreambuf_iterator<char>()};
  std::ofstream(dir_ / "config.json") << R"({"model_type": "qwen3", "vocab_size": 151936})";
  std::ofstream(dir_ / "tokenizer_config.json") << nlohmann::json{{"chat_template", text}}.dump();
  const std::vector<ChatMessage> hello = {{"user", "Hello!"}};
  // qwen3.expected.json, "Hello!" with the generation prompt and enable_thinking false.
  const auto off = make_run_chat_template("", dir_.string(), {.enable_thinking = false});
  EXPECT_EQ(off->name(), "qwen3_nothink");
  EXPECT_EQ(off->render(hello, true), "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n" + kEmptyThought);
  // Its Jinja asks `enable_thinking is false`: true and null think.
  for (const std::optional<bool> thinking : {std::optional<bool>(true), std::optional<bool>()}) {
    const auto on = make_run_chat_template("", dir_.string(), {.enable_thinking = thinking});
    EXPECT_EQ(on->name(), "qwen3");
    EXPECT_EQ(on->render(hello, true), "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n");
  }
}

}  // namespace
}  // namespace zt::models
