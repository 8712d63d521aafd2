// `zerotune generate --template` on the shipped tiny model (CPU): a plain prompt given with
// --template is a user's turn rendered through that template with its generation prompt, the
// same prompt as the conversation [{user: text}] gives; without --template it goes as it is.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/common/process_test_util.h"

namespace {

namespace fs = std::filesystem;
using zt::testing::CliRun;

const std::string kModel = (fs::path(ZT_SOURCE_DIR) / "examples/tiny-qwen").string();

class GenerateTemplateCli : public zt::testing::FolderTest {
 protected:
  // The JSON lines `zerotune generate ... --output_format jsonl` printed, in order.
  std::vector<nlohmann::json> results(const std::string& arguments) {
    const CliRun run =
        zt::testing::run_zerotune("generate --model_name_or_path " + kModel +
                                      " --device cpu --max_new_tokens 5 --output_format jsonl " + arguments,
                                  dir_);
    EXPECT_EQ(run.exit_code, 0) << run.output;
    std::vector<nlohmann::json> lines;
    std::istringstream in(run.output);
    for (std::string line; std::getline(in, line);)
      if (!line.empty() && line.front() == '{') lines.push_back(nlohmann::json::parse(line));
    return lines;
  }
  std::string file(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
};

TEST_F(GenerateTemplateCli, APromptWithTemplateIsAUserTurn) {
  const auto templated = results("--template qwen --prompt hello");
  const auto conversation = results("--template qwen --input_file " +
                                    file("messages.jsonl", R"({"messages": [{"role": "user", "content": "hello"}]})"
                                                           "\n"));
  ASSERT_EQ(templated.size(), 1u);
  ASSERT_EQ(conversation.size(), 1u);
  EXPECT_EQ(templated[0], conversation[0]) << "the same prompt, so the same tokens";
  const std::string prompt = templated[0]["prompt"];
  EXPECT_NE(prompt.find("<|im_start|>user\nhello<|im_end|>\n"), std::string::npos) << prompt;
  EXPECT_TRUE(prompt.ends_with("<|im_start|>assistant\n")) << prompt;
}

TEST_F(GenerateTemplateCli, APromptWithoutTemplateGoesAsItIs) {
  const auto raw = results("--prompt hello");
  const auto templated = results("--template qwen --prompt hello");
  ASSERT_EQ(raw.size(), 1u);
  ASSERT_EQ(templated.size(), 1u);
  EXPECT_EQ(raw[0]["prompt"], "hello");
  EXPECT_NE(raw[0]["prompt"], templated[0]["prompt"]);
}

TEST_F(GenerateTemplateCli, PlainPromptsOfAFileFollowTheTemplateToo) {
  const std::string prompts = file("prompts.jsonl", "\"hello\"\n{\"prompt\": \"hello\"}\n");
  const auto templated = results("--template qwen --input_file " + prompts);
  const auto single = results("--template qwen --prompt hello");
  ASSERT_EQ(templated.size(), 2u);
  ASSERT_EQ(single.size(), 1u);
  EXPECT_EQ(templated[0], single[0]);
  EXPECT_EQ(templated[1], single[0]);
  const auto raw = results("--input_file " + prompts);
  ASSERT_EQ(raw.size(), 2u);
  EXPECT_EQ(raw[0]["prompt"], "hello");
}

// A file's messages are read as `zerotune serve` reads them: content as a list of text parts,
// joined with a newline as vLLM joins them, and "developer", OpenAI's name for the system role;
// a part that is not text is refused, naming the line.
TEST_F(GenerateTemplateCli, FileMessagesAreReadAsTheServerReadsThem) {
  const auto parts =
      results("--template qwen --input_file " +
              file("parts.jsonl", R"({"messages": [{"role": "developer", "content": "be brief"}, )"
                                  R"({"role": "user", "content": [{"type": "text", "text": "Describe:"}, )"
                                  R"({"type": "text", "text": "the text"}]}]})"
                                  "\n"));
  const auto strings = results("--template qwen --input_file " +
                               file("strings.jsonl", R"({"messages": [{"role": "system", "content": "be brief"}, )"
                                                     R"({"role": "user", "content": "Describe:\nthe text"}]})"
                                                     "\n"));
  ASSERT_EQ(parts.size(), 1u);
  ASSERT_EQ(strings.size(), 1u);
  EXPECT_EQ(parts[0], strings[0]) << "the same conversation, so the same prompt";
  const std::string prompt = parts[0]["prompt"];
  EXPECT_NE(prompt.find("<|im_start|>system\nbe brief<|im_end|>\n"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("<|im_start|>user\nDescribe:\nthe text<|im_end|>\n"), std::string::npos) << prompt;

  const std::string image =
      file("image.jsonl",
           R"({"prompt": "ok"})"
           "\n"
           R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]})"
           "\n");
  const CliRun refused = zt::testing::run_zerotune(
      "generate --model_name_or_path " + kModel + " --device cpu --max_new_tokens 5 --input_file " + image, dir_);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.output.find("image.jsonl line 2"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("reads text only"), std::string::npos) << refused.output;
}

}  // namespace
