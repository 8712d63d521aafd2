// Each built-in template against its model family's own chat template: the conversations of
// tests/data/chat_templates/<family>.expected.json, rendered there from the family's real
// Jinja text as transformers' apply_chat_template renders it (tools/chat_template_fixtures.py),
// must render byte for byte the same here: system prompts, turns, tools, tool calls and
// results, reasoning, generation prompts with and without thinking.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "text/chat_template/chat_template.h"

namespace zt::models {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

const fs::path kData = fs::path(ZT_SOURCE_DIR) / "tests/data/chat_templates";

// OpenAI-style messages as the fixtures hold them.
std::vector<ChatMessage> messages_of(const json& list) {
  std::vector<ChatMessage> messages;
  for (const json& m : list) {
    ChatMessage message{m.at("role").get<std::string>(), m.at("content").get<std::string>()};
    for (const json& call : m.value("tool_calls", json::array()))
      message.tool_calls.push_back(
          {call.at("function").at("name").get<std::string>(), call.at("function").at("arguments").dump()});
    if (m.contains("reasoning_content")) message.reasoning_content = m.at("reasoning_content").get<std::string>();
    messages.push_back(std::move(message));
  }
  return messages;
}

ChatTools tools_of(const json& c) {
  ChatTools tools;
  for (const json& tool : c.value("tools", json::array())) tools.push_back(tool.dump());
  return tools;
}

class FamilyTemplate : public ::testing::TestWithParam<std::string> {};

TEST_P(FamilyTemplate, RendersAsTheFamilysOwnTemplate) {
  const fs::path path = kData / (GetParam() + ".expected.json");
  std::ifstream in(path);
  ASSERT_TRUE(in) << path << " is missing: run python3 tools/chat_template_fixtures.py";
  const json expected = json::parse(in);
  ASSERT_FALSE(expected.at("cases").empty());
  for (const json& c : expected.at("cases")) {
    const std::string name = c.at("template");
    const auto chat = make_model_chat_template(name);
    const std::string text = chat->render(messages_of(c.at("messages")), c.at("add_generation_prompt"), tools_of(c));
    EXPECT_EQ(text, c.at("text").get<std::string>())
        << GetParam() << ": case " << c.at("name").get<std::string>() << ", template " << name << ", rendered by "
        << c.value("renderer", expected.at("renderer").get<std::string>());
  }
}

INSTANTIATE_TEST_SUITE_P(Families, FamilyTemplate,
                         ::testing::Values("qwen2", "qwen2_5_base", "qwen2_5", "qwen2_5_math", "qwen3",
                                           "qwen3_instruct", "qwen3_instruct_plain", "deepseek_r1_distill",
                                           "deepseek_r1_distill_initial", "glm4", "chatglm3", "chatglm2"));

}  // namespace
}  // namespace zt::models
