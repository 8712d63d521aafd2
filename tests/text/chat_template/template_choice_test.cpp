// The default template of a model folder: recognised from the folder's own chat template text
// (the real texts of tests/data/chat_templates/), else the one for config.json's model_type
// with a warning, else an error asking for --template.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/common/op_test_util.h"
#include "tests/common/process_test_util.h"
#include "text/chat_template/chat_template.h"

namespace zt::models {
namespace {

namespace fs = std::filesystem;

const fs::path kData = fs::path(ZT_SOURCE_DIR) / "tests/data/chat_templates";

std::string real_template(const std::string& file) {
  std::ifstream in(kData / file);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(TemplateChoice, RecognisesEachFamilysRealTemplate) {
  EXPECT_EQ(recognise_chat_template(real_template("qwen2.jinja")), "qwen2");
  EXPECT_EQ(recognise_chat_template(real_template("qwen2_5_base.jinja")), "qwen2");
  EXPECT_EQ(recognise_chat_template(real_template("qwen2_5.jinja")), "qwen");
  EXPECT_EQ(recognise_chat_template(real_template("qwen3.jinja")), "qwen3");
  EXPECT_EQ(recognise_chat_template(real_template("qwen2_5_math.jinja")), "qwen2.5_math");
  EXPECT_EQ(recognise_chat_template(real_template("qwen3_instruct.jinja")), "qwen3_instruct");
  EXPECT_EQ(recognise_chat_template(real_template("qwen3_instruct_plain.jinja")), "qwen3_instruct_plain");
  EXPECT_EQ(recognise_chat_template(real_template("deepseek_r1_distill.jinja")), "deepseek_r1_distill");
  EXPECT_EQ(recognise_chat_template(real_template("deepseek_r1_distill_initial.jinja")), "deepseek_r1_distill_initial");
  EXPECT_EQ(recognise_chat_template(real_template("glm4.jinja")), "glm4");
  EXPECT_EQ(recognise_chat_template(real_template("chatglm3.jinja")), "chatglm3");
  EXPECT_EQ(recognise_chat_template("{% for m in messages %}[Round {{ loop.index }}]\n\n问：{{ m.content }}"),
            "chatglm2");
}

TEST(TemplateChoice, OtherLayoutsAreNotTakenForAFamily) {
  // QwQ's template forces "<think>\n" into the generation prompt; Qwen2-VL writes vision tokens;
  // Qwen1.5's default system prompt has no full stop and its last turn no <|im_end|>.
  EXPECT_EQ(recognise_chat_template("<|im_start|>assistant\n<think>\n{{ messages }}"), std::nullopt);
  EXPECT_EQ(recognise_chat_template("<|im_start|>system\nYou are a helpful assistant.<|vision_start|>"), std::nullopt);
  EXPECT_EQ(recognise_chat_template("{{ '<|im_start|>system\nYou are a helpful assistant<|im_end|>\n' }}"),
            std::nullopt);
  // GLM-4.5 thinks and calls tools in XML.
  EXPECT_EQ(recognise_chat_template("[gMASK]<sop><|assistant|><think></think><tool_call>"), std::nullopt);
  EXPECT_EQ(recognise_chat_template("{{ bos_token }}[INST] {{ m }} [/INST]"), std::nullopt);
  // DeepSeek-R1's and V3's own templates join every system message (is_first_sp).
  EXPECT_EQ(recognise_chat_template("{% set ns = namespace(is_first_sp=true) %}{% set ns.system_prompt = "
                                    "message['content'] %}<｜User｜><｜Assistant｜>content.split('</think>')[-1]"),
            std::nullopt);
  EXPECT_EQ(recognise_chat_template(""), std::nullopt);
}

TEST(TemplateChoice, ModelTypeDecidesWithAWarningWhenTheTemplateSaysNothing) {
  ChatTemplateChoice choice = choose_chat_template(real_template("qwen2_5.jinja"), "qwen3", 151936, "dir");
  EXPECT_EQ(choice.name, "qwen");  // the folder's own template wins over its model_type
  EXPECT_EQ(choice.warning, "");
  choice = choose_chat_template("", "qwen2", 151936, "dir");
  EXPECT_EQ(choice.name, "qwen");
  EXPECT_NE(
      choice.warning.find("dir ships no chat template; using 'qwen', the built-in template for model_type 'qwen2'"),
      std::string::npos)
      << choice.warning;
  EXPECT_NE(choice.warning.find("pass --template NAME"), std::string::npos);
  choice = choose_chat_template("{{ something else }}", "qwen3", 151936, "dir");
  EXPECT_EQ(choice.name, "qwen3");
  EXPECT_NE(choice.warning.find("ships a chat template that none of the built-in templates renders"),
            std::string::npos);
  EXPECT_EQ(choose_chat_template("", "glm4", 151552, "dir").name, "glm4");
  EXPECT_EQ(choose_chat_template("", "chatglm", 151552, "dir").name, "glm4");
  EXPECT_EQ(choose_chat_template("", "chatglm", 65024, "dir").name, "chatglm3");
  const std::string error = testing::error_of([] { choose_chat_template("", "llama", 32000, "dir"); });
  EXPECT_NE(error.find("dir ships no chat template and model_type 'llama' has no built-in template: pass --template"),
            std::string::npos)
      << error;
}

class ModelFolder : public testing::FolderTest {
 protected:
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  std::string dir() const { return dir_.string(); }
};

TEST_F(ModelFolder, ReadsChatTemplateJinjaBeforeTokenizerConfig) {
  write("config.json", R"({"model_type": "qwen2", "vocab_size": 151936})");
  write("tokenizer_config.json", nlohmann::json{{"chat_template", real_template("qwen2.jinja")}}.dump());
  EXPECT_EQ(shipped_chat_template(dir()), real_template("qwen2.jinja"));
  EXPECT_EQ(chat_template_name_for_model(dir()), "qwen2");
  write("chat_template.jinja", real_template("qwen2_5.jinja"));
  EXPECT_EQ(chat_template_name_for_model(dir()), "qwen");
}

TEST_F(ModelFolder, ReadsTheDefaultOfAListOfTemplates) {
  write("config.json", R"({"model_type": "qwen2"})");
  const nlohmann::json templates = {{{"name", "tool_use"}, {"template", "unused"}},
                                    {{"name", "default"}, {"template", real_template("qwen2.jinja")}}};
  write("tokenizer_config.json", nlohmann::json{{"chat_template", templates}}.dump());
  EXPECT_EQ(chat_template_name_for_model(dir()), "qwen2");
}

TEST_F(ModelFolder, DeepSeekR1DistillQwenIsNoLongerTakenForQwen25) {
  // Its config.json says qwen2; its tokenizer_config.json names DeepSeek's template.
  write("config.json", R"({"model_type": "qwen2", "vocab_size": 152064})");
  write("tokenizer_config.json", nlohmann::json{{"chat_template", real_template("deepseek_r1_distill.jinja")}}.dump());
  EXPECT_EQ(chat_template_name_for_model(dir()), "deepseek_r1_distill");
}

TEST(TemplateChoice, TheDemoModelGetsTheQwen25Layout) {
  EXPECT_EQ(chat_template_name_for_model(std::string(ZT_SOURCE_DIR) + "/examples/tiny-qwen"), "qwen");
}

}  // namespace
}  // namespace zt::models
