// The GLM family's layouts. ChatGLM3 and GLM-4 write each turn as <|role|> metadata "\n"
// content and end the prompt with <|assistant|>; the model itself produces the "\n", the
// answer and the token after it (the next <|role|>, or eos at the end), so those are the
// trained tokens, as in THUDM's fine-tuning scripts. A tool call is an assistant turn whose
// metadata is the tool's name; a tool's result an <|observation|> turn. ChatGLM2 writes
// "[Round N]\n\n问：...\n\n答：" rounds and trains the last answer followed by eos.
#include "runtime/error.h"
#include "text/chat_template/chat_template.h"
#include "text/chat_template/python_json.h"

namespace zt::models {
namespace {

using nlohmann::ordered_json;

const std::vector<std::string_view> kGlmRoles = {"system", "user", "assistant", "tool", "observation"};

ChatPart encoded_only(std::string token, bool answer) {
  ChatPart part = chat_token(std::move(token), answer);
  part.shown = "";
  return part;
}

// The function schema of a tool, whether given in OpenAI's wrapping or bare.
ordered_json function_of(const std::string& tool, std::string_view template_name) {
  ordered_json json = parse_ordered_json(tool, "a tool");
  if (json.contains("function")) {
    ZT_REQUIRE(json.value("type", "function") == "function", "chat template '" + std::string(template_name) +
                                                                 "' renders tools of type \"function\"; got " +
                                                                 json.dump().substr(0, 200));
    json = json["function"];
  }
  ZT_REQUIRE(json.is_object() && json.contains("name") && json["name"].is_string(),
             "a tool must name its function: " + json.dump().substr(0, 200));
  return json;
}

// ChatGLM3 and GLM-4: they differ in the prefix token, in how a turn's text is encoded and
// spaced, in how tools and tool calls are written, and in eos.
class RoleTokenTemplate : public ChatTemplate {
 public:
  std::vector<ChatPart> parts(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                              const ChatTools& tools) const override {
    require_roles(messages, name(), kGlmRoles);
    std::vector<ChatPart> out = {chat_token("[gMASK]", false), chat_token(start_token(), false)};
    bool after_answer = false;
    auto turn = [&](const std::string& role, const std::string& metadata, const std::string& content) {
      const bool answer = role == "assistant";
      out.push_back(chat_token("<|" + role + "|>", after_answer));
      append_content(metadata, content, answer, out);
      after_answer = answer;
    };
    if (!tools.empty()) turn("system", "", tools_prompt(tools));
    for (const ChatMessage& m : messages) {
      const std::string role = m.role == "tool" ? "observation" : m.role;
      if (m.role != "assistant" || m.tool_calls.empty()) {
        if (renders_empty_turns() || !m.content.empty()) turn(role, "", m.content);
        continue;
      }
      if (!m.content.empty()) turn(role, "", m.content);
      for (const ToolCall& call : m.tool_calls) turn(role, call.name, call_text(call));
    }
    if (add_generation_prompt)
      out.push_back(chat_token("<|assistant|>", false));
    else if (after_answer)
      out.push_back(encoded_only(eos_token(), true));
    return out;
  }

  std::vector<std::string> end_of_turn_tokens() const override { return {"<|user|>", "<|observation|>"}; }

 protected:
  virtual std::string start_token() const = 0;
  virtual std::string eos_token() const = 0;
  virtual bool renders_empty_turns() const = 0;
  virtual std::string tools_prompt(const ChatTools& tools) const = 0;
  virtual std::string call_text(const ToolCall& call) const = 0;
  virtual void append_content(const std::string& metadata, const std::string& content, bool answer,
                              std::vector<ChatPart>& out) const = 0;
};

// ChatGLM3 encodes metadata + "\n" and the content separately, each with sentencepiece's
// leading space; its shipped template writes that space as "\n ". Tools and calls are written
// as ChatGLM3's own fine-tuning code writes them: a system turn of the tools as indented JSON,
// and a call as Python, ```python\ntool_call(city='Paris')\n```.
class ChatGlm3Template final : public RoleTokenTemplate {
 public:
  std::string_view name() const override { return "chatglm3"; }

 protected:
  bool joins_text() const override { return false; }
  std::string start_token() const override { return "sop"; }
  std::string eos_token() const override { return "</s>"; }
  bool renders_empty_turns() const override { return true; }

  std::string tools_prompt(const ChatTools& tools) const override {
    ordered_json functions = ordered_json::array();
    for (const std::string& tool : tools) functions.push_back(function_of(tool, name()));
    return "Answer the following questions as best as you can. You have access to the following tools:\n" +
           python_json_dumps(functions, 4);
  }

  std::string call_text(const ToolCall& call) const override {
    const ordered_json arguments =
        parse_ordered_json(call.arguments, "the arguments of the call of tool '" + call.name + "'");
    ZT_REQUIRE(arguments.is_object(),
               "chat template 'chatglm3' writes a tool call's arguments as keywords, so they "
               "must be a JSON object; the call of '" +
                   call.name + "' has " + arguments.dump().substr(0, 200));
    std::string keywords;
    for (auto it = arguments.begin(); it != arguments.end(); ++it)
      keywords += (keywords.empty() ? "" : ", ") + it.key() + "=" + python_repr(*it);
    return "```python\ntool_call(" + keywords + ")\n```";
  }

  void append_content(const std::string& metadata, const std::string& content, bool answer,
                      std::vector<ChatPart>& out) const override {
    out.push_back(chat_text(metadata + "\n", answer));
    ChatPart body = chat_text(content, answer);
    body.shown = " " + content;
    out.push_back(std::move(body));
  }
};

// GLM-4 (glm-4-9b-chat): the tools in a system turn of its own, each function as JSON
// indented by 4 under "## name" (one newline before it, not the template's two: transformers
// renders with trim_blocks, which drops the newline after a block tag); a call's arguments as
// JSON; empty turns left out.
class Glm4Template final : public RoleTokenTemplate {
 public:
  std::string_view name() const override { return "glm4"; }

 protected:
  std::string start_token() const override { return "<sop>"; }
  std::string eos_token() const override { return "<|endoftext|>"; }
  bool renders_empty_turns() const override { return false; }

  std::string tools_prompt(const ChatTools& tools) const override {
    std::string text =
        "你是一个名为 ChatGLM 的人工智能助手。你是基于智谱AI训练的语言模型 GLM-4 "
        "模型开发的，你的任务是针对用户的问题和要求提供适当的答复和支持。\n\n# 可用工具";
    for (const std::string& tool : tools) {
      const ordered_json function = function_of(tool, name());
      text += "\n## " + function["name"].get<std::string>() + "\n\n" + python_json_dumps(function, 4) +
              "\n在调用上述函数时，请使用 Json 格式表示调用的参数。";
    }
    return text;
  }

  std::string call_text(const ToolCall& call) const override {
    const ordered_json arguments =
        parse_ordered_json(call.arguments, "the arguments of the call of tool '" + call.name + "'");
    return arguments.is_string() ? arguments.get<std::string>() : python_json_dumps(arguments);
  }

  void append_content(const std::string& metadata, const std::string& content, bool answer,
                      std::vector<ChatPart>& out) const override {
    out.push_back(chat_text(metadata + "\n" + content, answer));
  }
};

class ChatGlm2Template final : public ChatTemplate {
 public:
  std::string_view name() const override { return "chatglm2"; }

  std::vector<ChatPart> parts(const std::vector<ChatMessage>& messages, bool, const ChatTools& tools) const override {
    require_no_tools(messages, tools, name());
    require_roles(messages, name(), {"user", "assistant"});
    for (std::size_t i = 0; i < messages.size(); ++i)
      if (messages[i].role != (i % 2 == 0 ? "user" : "assistant"))
        zt::fail("chat template 'chatglm2': message " + std::to_string(i) + " is '" + messages[i].role +
                 "' but ChatGLM2 rounds alternate user, assistant, starting with user (no system role)");
    // The tokenizer adds [gMASK] sop in front of ChatGLM2's prompt; the prompt text lacks them.
    std::vector<ChatPart> out = {encoded_only("[gMASK]", false), encoded_only("sop", false)};
    const bool ends_with_answer = messages.back().role == "assistant";
    std::string prompt;
    for (std::size_t i = 0; i < messages.size(); i += 2) {
      prompt += "[Round " + std::to_string(i / 2 + 1) + "]\n\n问：" + messages[i].content + "\n\n答：";
      if (i + 1 < messages.size() && i + 2 < messages.size()) prompt += messages[i + 1].content + "\n\n";
    }
    out.push_back(chat_text(prompt, false));
    if (ends_with_answer) {
      out.push_back(chat_text(messages.back().content, true));
      out.push_back(encoded_only("</s>", true));
    }
    return out;
  }

 protected:
  bool joins_text() const override { return false; }
};

}  // namespace

std::unique_ptr<ChatTemplate> make_chatglm3_chat_template() { return std::make_unique<ChatGlm3Template>(); }
std::unique_ptr<ChatTemplate> make_glm4_chat_template() { return std::make_unique<Glm4Template>(); }
std::unique_ptr<ChatTemplate> make_chatglm2_chat_template() { return std::make_unique<ChatGlm2Template>(); }

}  // namespace zt::models
