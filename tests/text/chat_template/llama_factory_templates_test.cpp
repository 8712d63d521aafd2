// LLaMA-Factory's templates as --template names them: every expectation below is what
// LLaMA-Factory's own code (src/llamafactory/data/template.py, formatter.py, tool_utils.py,
// converter.py and processor/supervised.py) gives for the same conversation. Each test names the
// register_template call, formatter or method its strings come from. "Trained" lists the runs of
// labelled tokens as the supervised processor labels them (the prompt -100, the response as it
// is, efficient_eos's eos at the first token of each later prompt shown as [token→eos], the
// final eos as <eos>). `python3 tools/llama_factory_templates.py LLAMA_FACTORY/src` renders
// these conversations through LLaMA-Factory's own code.
#include <gtest/gtest.h>

#include "tests/common/op_test_util.h"
#include "tests/text/chat_template/fake_tokenizer.h"
#include "text/chat_template/chat_template.h"
#include "text/chat_template/template_names.h"

namespace zt::models {
namespace {

using testing::error_of;

std::string render(std::string_view name, const std::vector<ChatMessage>& messages, bool generation_prompt,
                   const ChatTools& tools = {}, const ChatTemplateOptions& options = {}) {
  return make_chat_template(name, options)->render(messages, generation_prompt, tools);
}

std::string render_error(std::string_view name, const std::vector<ChatMessage>& messages, bool generation_prompt) {
  return error_of([&] { render(name, messages, generation_prompt); });
}

// The runs of labelled parts, as the supervised processor's labels fall on them.
std::vector<std::string> trained(std::string_view name, const std::vector<ChatMessage>& messages,
                                 const ChatTools& tools = {}, const ChatTemplateOptions& options = {}) {
  std::vector<std::string> runs;
  std::string run;
  for (const ChatPart& part : make_chat_template(name, options)->parts(messages, false, tools)) {
    const std::string shown = part.eos ? "<eos>" : part.text;
    if (part.answer) {
      run += shown;
    } else if (part.labelled_eos) {
      run += "[" + shown + "→eos]";
      runs.push_back(run);
      run.clear();
    } else if (!run.empty()) {
      runs.push_back(run);
      run.clear();
    }
  }
  if (!run.empty()) runs.push_back(run);
  return runs;
}

using Runs = std::vector<std::string>;

// The start of `text` as long as `expected`, to compare a prompt's head.
std::string head(const std::string& text, const std::string& expected) { return text.substr(0, expected.size()); }

ChatMessage call_of(std::vector<ToolCall> calls, std::string content = "") {
  ChatMessage m{"assistant", std::move(content)};
  m.tool_calls = std::move(calls);
  return m;
}

ChatMessage reasoned(std::string content, std::string reasoning) {
  ChatMessage m{"assistant", std::move(content)};
  m.reasoning_content = std::move(reasoning);
  return m;
}

const ToolCall kParis{"get_weather", R"({"city": "Paris"})"};
const ChatTools kTools = {R"({"type": "function", "function": {"name": "get_weather", "description": "天气 of a city",
  "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}})"};

// user, a call of get_weather, its result, the answer: converter.py's function and observation.
std::vector<ChatMessage> tool_round() {
  return {{"user", "Weather in Paris?"}, call_of({kParis}), {"tool", "17"}, {"assistant", "It is 17."}};
}

// QwenToolUtils.tool_formatter: QWEN_TOOL_PROMPT with each tool as one line of json.dumps.
const std::string kQwenTools =
    "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with "
    "function signatures within <tools></tools> XML tags:\n<tools>\n"
    R"({"type": "function", "function": {"name": "get_weather", "description": "天气 of a city", "parameters": )"
    R"({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}})"
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
    "<args-json-object>}\n</tool_call>";
// QwenToolUtils.function_formatter.
const std::string kQwenCall =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
const std::string kQwenDefault = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

// GLM4ToolUtils.tool_formatter: GLM4_TOOL_PROMPT, then "\n\n## name\n\n" and json.dumps(indent=4).
const std::string kGlm4Tools =
    "你是一个名为 ChatGLM 的人工智能助手。你是基于智谱 AI 公司训练的语言模型 GLM-4 模型开发的，你的任务是针对用户的问"
    "题和要求提供适当的答复和支持。\n\n# 可用工具\n\n## get_weather\n\n{\n    \"name\": \"get_weather\",\n    "
    "\"description\": \"天气 of a city\",\n    \"parameters\": {\n        \"type\": \"object\",\n        "
    "\"properties\": {\n            \"city\": {\n                \"type\": \"string\"\n            }\n        },\n"
    "        \"required\": [\n            \"city\"\n        ]\n    }\n}\n在调用上述函数时，请使用 Json "
    "格式表示调用的参数。";

// register_template(name="qwen"): format_user/assistant/system, default_system; the response is
// "{{content}}<|im_end|>\n", its newline trained too.
TEST(LlamaFactoryTemplates, QwenWritesItsDefaultSystemPromptAndTrainsTheNewlineAfterImEnd) {
  EXPECT_EQ(render("qwen", {{"user", "Hi"}, {"assistant", "Hello."}}, false),
            "<|im_start|>system\n" + kQwenDefault +
                "<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n");
  EXPECT_EQ(trained("qwen", {{"user", "Hi"}, {"assistant", "Hello."}}), Runs{"Hello.<|im_end|>\n"});
  EXPECT_EQ(render("qwen", {{"system", "Be brief."}, {"user", "Hi"}}, true),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  // Template._encode: `system or self.default_system`, so an empty system prompt is the default.
  EXPECT_EQ(render("qwen", {{"system", ""}, {"user", "Hi"}}, true), render("qwen", {{"user", "Hi"}}, true));
  const std::vector<ChatMessage> multi = {{"user", "q1"}, {"assistant", "a1"}, {"user", "q2"}, {"assistant", "a2"}};
  EXPECT_EQ(render("qwen", multi, false),
            "<|im_start|>system\n" + kQwenDefault +
                "<|im_end|>\n<|im_start|>user\nq1<|im_end|>\n<|im_start|>assistant\na1<|im_end|>\n"
                "<|im_start|>user\nq2<|im_end|>\n<|im_start|>assistant\na2<|im_end|>\n");
  EXPECT_EQ(trained("qwen", multi), (Runs{"a1<|im_end|>\n", "a2<|im_end|>\n"}));
  // Thinking is the content's own business in a template that is no ReasoningTemplate; the data
  // has no reasoning_content field in LLaMA-Factory, so it is left out.
  EXPECT_EQ(trained("qwen", {{"user", "q"}, {"assistant", "<think>\nr\n</think>\n\na"}}),
            Runs{"<think>\nr\n</think>\n\na<|im_end|>\n"});
  EXPECT_EQ(trained("qwen", {{"user", "q"}, reasoned("a", "r")}), Runs{"a<|im_end|>\n"});
  EXPECT_EQ(make_chat_template("qwen")->end_of_turn_tokens(), std::vector<std::string>{"<|im_end|>"});
}

// format_tools (tool_format="qwen") after the system prompt or the default; format_function
// "{{content}}<|im_end|>\n"; format_observation a user turn of <tool_response>; consecutive
// results joined by the OpenAI converter.
TEST(LlamaFactoryTemplates, QwenToolsCallsAndResults) {
  EXPECT_EQ(render("qwen", tool_round(), false, kTools),
            "<|im_start|>system\n" + kQwenDefault + kQwenTools +
                "<|im_end|>\n<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n" + kQwenCall +
                "<|im_end|>\n<|im_start|>user\n<tool_response>\n17\n</tool_response><|im_end|>\n"
                "<|im_start|>assistant\nIt is 17.<|im_end|>\n");
  EXPECT_EQ(trained("qwen", tool_round(), kTools), (Runs{kQwenCall + "<|im_end|>\n", "It is 17.<|im_end|>\n"}));
  std::vector<ChatMessage> with_system = tool_round();
  with_system.insert(with_system.begin(), {"system", "Be brief."});
  const std::string system_then_tools = "<|im_start|>system\nBe brief." + kQwenTools + "<|im_end|>\n<|im_start|>user\n";
  EXPECT_EQ(head(render("qwen", with_system, false, kTools), system_then_tools), system_then_tools);
  // Parallel calls: one <tool_call> per line; their results one observation.
  const std::vector<ChatMessage> parallel = {{"user", "Paris and Rome?"},
                                             call_of({kParis, {"get_weather", R"({"city": "Rome"})"}}),
                                             {"tool", "17"},
                                             {"tool", "20"},
                                             {"assistant", "17 and 20."}};
  const std::string rome =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call>";
  EXPECT_EQ(trained("qwen", parallel, kTools),
            (Runs{kQwenCall + "\n" + rome + "<|im_end|>\n", "17 and 20.<|im_end|>\n"}));
  EXPECT_NE(render("qwen", parallel, false, kTools)
                .find("<|im_start|>user\n<tool_response>\n17\n</tool_response>\n<tool_response>\n20\n</tool_response>"
                      "<|im_end|>\n<|im_start|>assistant\n17 and 20."),
            std::string::npos);
  // FunctionFormatter: text before the calls stays in front of them, as "text<tool_call>..." does.
  EXPECT_EQ(trained("qwen", {{"user", "q"}, call_of({kParis}, "Let me look.\n")}, kTools),
            Runs{"Let me look.\n" + kQwenCall + "<|im_end|>\n"});
}

// Two rounds, the first answer with its thinking.
std::vector<ChatMessage> thinking_rounds() {
  return {{"user", "q1"}, {"assistant", "<think>\nr1\n</think>\n\na1"}, {"user", "q2"}, {"assistant", "a2"}};
}

// register_template(name="qwen3", template_class=ReasoningTemplate) with enable_thinking true:
// no default system prompt; encode_multiturn keeps every answer's thinking and starts each
// answer without any with the trained empty thought "<think>\n\n</think>\n\n" (add_thought).
TEST(LlamaFactoryTemplates, Qwen3StartsEveryAnswerWithAThoughtAndKeepsEarlierThinking) {
  EXPECT_EQ(render("qwen3", {{"user", "Hi"}, {"assistant", "Hello."}}, false),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nHello.<|im_end|>\n");
  const std::vector<ChatMessage> think = thinking_rounds();
  EXPECT_EQ(render("qwen3", think, false),
            "<|im_start|>user\nq1<|im_end|>\n<|im_start|>assistant\n<think>\nr1\n</think>\n\na1<|im_end|>\n"
            "<|im_start|>user\nq2<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\na2<|im_end|>\n");
  EXPECT_EQ(trained("qwen3", think),
            (Runs{"<think>\nr1\n</think>\n\na1<|im_end|>\n", "<think>\n\n</think>\n\na2<|im_end|>\n"}));
  // reasoning_content is written where LLaMA-Factory's data holds thinking: in the thought words.
  EXPECT_EQ(render("qwen3", {{"user", "q1"}, reasoned("a1", "r1"), {"user", "q2"}, {"assistant", "a2"}}, false),
            render("qwen3", think, false));
  // Tools without a system prompt: Template._encode renders "" + tool_text, so the system turn
  // starts with QWEN_TOOL_PROMPT's "\n\n".
  const std::string tools_only = "<|im_start|>system\n" + kQwenTools + "<|im_end|>\n";
  EXPECT_EQ(head(render("qwen3", tool_round(), false, kTools), tools_only), tools_only);
  EXPECT_EQ(trained("qwen3", tool_round(), kTools), (Runs{"<think>\n\n</think>\n\n" + kQwenCall + "<|im_end|>\n",
                                                          "<think>\n\n</think>\n\nIt is 17.<|im_end|>\n"}));
  // A call's own thinking: FunctionFormatter puts the thought before the calls.
  std::vector<ChatMessage> thinking_call = tool_round();
  thinking_call[1].reasoning_content = "I will look.";
  thinking_call[3].reasoning_content = "Found.";
  EXPECT_EQ(trained("qwen3", thinking_call, kTools),
            (Runs{"<think>\nI will look.\n</think>\n\n" + kQwenCall + "<|im_end|>\n",
                  "<think>\nFound.\n</think>\n\nIt is 17.<|im_end|>\n"}));
}

// ReasoningTemplate.encode_multiturn with enable_thinking False removes every thought
// (remove_thought) and puts the empty thought in the prompt; with None it keeps the thinking
// given and still puts the empty thought in the prompt.
TEST(LlamaFactoryTemplates, Qwen3EnableThinkingFalseOrNull) {
  const std::vector<ChatMessage> think = thinking_rounds();
  const std::string both_empty =
      "<|im_start|>user\nq1<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\na1<|im_end|>\n"
      "<|im_start|>user\nq2<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\na2<|im_end|>\n";
  EXPECT_EQ(render("qwen3", think, false, {}, {.enable_thinking = false}), both_empty);
  EXPECT_EQ(trained("qwen3", think, {}, {.enable_thinking = false}), (Runs{"a1<|im_end|>\n", "a2<|im_end|>\n"}));
  EXPECT_EQ(trained("qwen3", think, {}, {.enable_thinking = std::nullopt}),
            (Runs{"<think>\nr1\n</think>\n\na1<|im_end|>\n", "a2<|im_end|>\n"}));
  // remove_thought matches the thought words exactly: other spellings stay.
  EXPECT_EQ(trained("qwen3", {{"user", "q"}, {"assistant", "<think>r</think>a"}}, {}, {.enable_thinking = false}),
            Runs{"<think>r</think>a<|im_end|>\n"});
}

// ReasoningTemplate.encode_oneturn, a generation prompt: earlier answers lose their thinking
// (preserve_thinking false); without thinking the prompt ends with the empty thought.
TEST(LlamaFactoryTemplates, Qwen3GenerationPromptDropsEarlierThinking) {
  const std::vector<ChatMessage> history = {
      {"system", "S"}, {"user", "q1"}, {"assistant", "<think>\nr1\n</think>\n\na1"}, {"user", "q2"}};
  const std::string prompt =
      "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nq1<|im_end|>\n<|im_start|>assistant\na1<|im_end|>\n"
      "<|im_start|>user\nq2<|im_end|>\n<|im_start|>assistant\n";
  EXPECT_EQ(render("qwen3", history, true), prompt);
  EXPECT_EQ(render("qwen3", history, true, {}, {.enable_thinking = false}), prompt + "<think>\n\n</think>\n\n");
  EXPECT_EQ(render("qwen3", {{"user", "Hi"}}, true), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

// register_template(name="qwen3_nothink"): the qwen3 formatters as a plain Template (Qwen3's
// Instruct-2507 models): no thinking rules at all, no empty thought anywhere.
TEST(LlamaFactoryTemplates, Qwen3NothinkHasNoThinkingRules) {
  EXPECT_EQ(render("qwen3_nothink", {{"user", "Hi"}}, true), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  const std::vector<ChatMessage> think = thinking_rounds();
  EXPECT_EQ(trained("qwen3_nothink", think), (Runs{"<think>\nr1\n</think>\n\na1<|im_end|>\n", "a2<|im_end|>\n"}));
  EXPECT_EQ(render("qwen3_nothink", {think[0], think[1], think[2]}, true),
            "<|im_start|>user\nq1<|im_end|>\n<|im_start|>assistant\n<think>\nr1\n</think>\n\na1<|im_end|>\n"
            "<|im_start|>user\nq2<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(trained("qwen3_nothink", tool_round(), kTools),
            (Runs{kQwenCall + "<|im_end|>\n", "It is 17.<|im_end|>\n"}));
  const std::string tools_only = "<|im_start|>system\n" + kQwenTools + "<|im_end|>\n";
  EXPECT_EQ(head(render("qwen3_nothink", tool_round(), false, kTools), tools_only), tools_only);
}

// register_template(name="glm4"): efficient_eos, so the response is "\n{{content}}" alone and
// the supervised processor labels each later prompt's first token with eos and appends eos.
TEST(LlamaFactoryTemplates, Glm4TrainsEosAfterEachAnswer) {
  EXPECT_EQ(render("glm4", {{"user", "Hi"}, {"assistant", "Hello."}}, false),
            "[gMASK]<sop><|user|>\nHi<|assistant|>\nHello.");
  EXPECT_EQ(trained("glm4", {{"user", "Hi"}, {"assistant", "Hello."}}), Runs{"\nHello.<eos>"});
  EXPECT_EQ(render("glm4", {{"system", "Be brief."}, {"user", "Hi"}}, true),
            "[gMASK]<sop><|system|>\nBe brief.<|user|>\nHi<|assistant|>");
  const std::vector<ChatMessage> multi = {{"user", "q1"}, {"assistant", "a1"}, {"user", "q2"}, {"assistant", "a2"}};
  EXPECT_EQ(render("glm4", multi, false), "[gMASK]<sop><|user|>\nq1<|assistant|>\na1<|user|>\nq2<|assistant|>\na2");
  EXPECT_EQ(trained("glm4", multi), (Runs{"\na1[<|user|>→eos]", "\na2<eos>"}));
  EXPECT_EQ(make_chat_template("glm4")->end_of_turn_tokens(),
            (std::vector<std::string>{"<|user|>", "<|observation|>"}));
}

// tool_round() in GLM-4's tool format, which glm4 and chatglm3 write after their own opening
// `start`: the tools in the system prompt, the call "name\nargs" closed by <|observation|>
// (labelled eos), the result after it.
void expect_glm4_tool_round(const char* name, const std::string& start) {
  SCOPED_TRACE(name);
  EXPECT_EQ(render(name, tool_round(), false, kTools),
            start + "<|system|>\n" + kGlm4Tools +
                "<|user|>\nWeather in Paris?<|assistant|>get_weather\n{\"city\": \"Paris\"}<|observation|>\n17"
                "<|assistant|>\nIt is 17.");
  EXPECT_EQ(trained(name, tool_round(), kTools),
            (Runs{"get_weather\n{\"city\": \"Paris\"}[<|observation|>→eos]", "\nIt is 17.<eos>"}));
}

// format_tools (tool_format="glm4") appended to the system prompt as it is; format_function
// "{{content}}" right after <|assistant|>, GLM4ToolUtils.function_formatter's "name\nargs".
TEST(LlamaFactoryTemplates, Glm4ToolsCallsAndResults) {
  expect_glm4_tool_round("glm4", "[gMASK]<sop>");
  std::vector<ChatMessage> with_system = tool_round();
  with_system.insert(with_system.begin(), {"system", "Be brief."});
  const std::string system_then_tools = "[gMASK]<sop><|system|>\nBe brief." + kGlm4Tools + "<|user|>";
  EXPECT_EQ(head(render("glm4", with_system, false, kTools), system_then_tools), system_then_tools);
  // GLM4ToolUtils.function_formatter: "GLM-4 does not support parallel functions."
  EXPECT_NE(
      error_of([] {
        render("glm4", {{"user", "q"}, call_of({kParis, kParis})}, false, kTools);
      })
          .find("LLaMA-Factory's template 'glm4' writes one tool call per answer (GLM-4 does not support parallel "
                "functions); this answer calls 2"),
      std::string::npos);
}

// register_template(name="chatglm3"): glm4's layout with tokens and "\n" as elements of their
// own, and GLM-4's tool format (not ChatGLM3's own ReAct-style prompt).
TEST(LlamaFactoryTemplates, Chatglm3UsesGlm4sToolFormat) {
  EXPECT_EQ(render("chatglm3", {{"system", "S"}, {"user", "q1"}, {"assistant", "a1"}}, false),
            "[gMASK]sop<|system|>\nS<|user|>\nq1<|assistant|>\na1");
  EXPECT_EQ(trained("chatglm3", {{"user", "q1"}, {"assistant", "a1"}, {"user", "q2"}, {"assistant", "a2"}}),
            (Runs{"\na1[<|user|>→eos]", "\na2<eos>"}));
  expect_glm4_tool_round("chatglm3", "[gMASK]sop");
}

// register_template(name="empty"): every formatter "{{content}}", no eos; tools in the default
// format (DefaultToolUtils), calls as "Action: ...\nAction Input: ...".
TEST(LlamaFactoryTemplates, EmptyJoinsTheContents) {
  EXPECT_EQ(render("empty", {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello."}}, false),
            "Be brief.HiHello.");
  EXPECT_EQ(trained("empty", {{"user", "q1"}, {"assistant", "a1"}, {"user", "q2"}, {"assistant", "a2"}}),
            (Runs{"a1", "a2"}));
  EXPECT_EQ(render("empty", tool_round(), false, kTools),
            "You have access to the following tools:\n> Tool Name: get_weather\nTool Description: 天气 of a city\n"
            "Tool Args:\n  - city (string, required): \n\nUse the following format if using a tool:\n```\nAction: "
            "tool name (one of [get_weather])\nAction Input: the input to the tool, in a JSON format representing the "
            "kwargs (e.g. ```{\"input\": \"hello world\", \"num_beams\": 5}```)\n```\nWeather in Paris?Action: "
            "get_weather\nAction Input: {\"city\": \"Paris\"}17It is 17.");
  EXPECT_TRUE(make_chat_template("empty")->end_of_turn_tokens().empty());
}

// Template._convert_elements_to_ids: one tokenizer call per element, template tokens by id.
TEST(LlamaFactoryTemplates, EachElementIsEncodedOnItsOwn) {
  FakeTokenizer tok;
  // qwen3: the empty thought is get_thought_word_ids, a call of its own before the response.
  EncodedConversation got = make_chat_template("qwen3")->encode(tok, {{"user", "U"}, {"assistant", "A"}}, false);
  Expected expected = Expected()
                          .chatml_turn("user\nU")
                          .token(1001)
                          .piece("assistant\n")
                          .piece("<think>\n\n</think>\n\n", true)
                          .piece("A", true)
                          .token(1002, true)
                          .piece("\n", true);
  EXPECT_EQ(got.ids, expected.ids);
  EXPECT_EQ(got.answer, expected.answer);
  EXPECT_TRUE(got.relabelled.empty());
  EXPECT_EQ(got.kept_tail, 0u);
  // chatglm3: {"token": ...} slots, and "\n" apart from the content.
  got = make_chat_template("chatglm3")
            ->encode(tok, {{"system", "S"}, {"user", "q1"}, {"assistant", "a1"}, {"user", "q2"}, {"assistant", "a2"}},
                     false);
  expected = Expected()
                 .token(1003)
                 .token(1004)
                 .token(1006)
                 .piece("\n")
                 .piece("S")
                 .token(1007)
                 .piece("\n")
                 .piece("q1")
                 .token(1008)
                 .piece("\n", true)
                 .piece("a1", true)
                 .token(1007)
                 .piece("\n")
                 .piece("q2")
                 .token(1008)
                 .piece("\n", true)
                 .piece("a2", true)
                 .token(1010, true);  // the tokenizer's eos
  EXPECT_EQ(got.ids, expected.ids);
  EXPECT_EQ(got.answer, expected.answer);
  // The second <|user|> is labelled eos; the final eos is kept by any cut.
  const std::size_t second_user = 19;  // after 3 tokens, 3 + 2 + 3 + 2 + 3 piece ids and 2 tokens
  ASSERT_EQ(got.ids.at(second_user), 1007);
  EXPECT_EQ(got.relabelled, (std::vector<std::pair<std::size_t, TokenId>>{{second_user, 1010}}));
  EXPECT_EQ(got.kept_tail, 1u);
  const std::vector<std::int64_t> labels = got.labels();
  for (std::size_t i = 0; i < labels.size(); ++i)
    EXPECT_EQ(labels[i], i == second_user ? 1010 : got.answer[i] ? got.ids[i] : -100) << i;
}

// The registry the help texts print is the list make_chat_template accepts, no more, no less.
TEST(LlamaFactoryTemplates, AcceptedNamesAreTheRegistry) {
  const std::vector<std::string> names = accepted_chat_template_names();
  EXPECT_EQ(names, (std::vector<std::string>{"qwen", "qwen3", "qwen3_nothink", "glm4", "chatglm3", "empty", "qwen2",
                                             "qwen2.5", "chatglm2", "none"}));
  for (const std::string& name : names) EXPECT_NE(make_chat_template(name), nullptr) << name;
  const std::string listed = chat_template_names();
  for (const std::string& name : names)
    EXPECT_NE(listed.find(name), std::string::npos) << name << " is accepted but the error's list omits it";
  EXPECT_EQ(llama_factory_template_names() + ", " + model_family_template_names(),
            "qwen, qwen3, qwen3_nothink, glm4, chatglm3, empty, qwen2, qwen2.5, chatglm2, none");
}

// Names: LLaMA-Factory's that zerotune implements give its template; zerotune's own give the
// model family's template; any other is an error listing both.
TEST(LlamaFactoryTemplates, NamesAndRefusals) {
  for (const char* name : {"qwen", "qwen3", "qwen3_nothink", "glm4", "chatglm3", "empty"})
    EXPECT_EQ(make_chat_template(name)->origin(), "LLaMA-Factory's") << name;
  EXPECT_EQ(make_chat_template("qwen2.5")->origin(), "the model's own");
  EXPECT_EQ(render("qwen2.5", {{"user", "U"}, {"assistant", "A"}}, false),
            make_model_chat_template("qwen")->render({{"user", "U"}, {"assistant", "A"}}, false));
  for (const char* name : {"llama3", "mistral", "gemma", "deepseek3", "qwen2_vl"}) {
    const std::string error = error_of([&] { make_chat_template(name); });
    EXPECT_NE(error.find("unknown chat template '" + std::string(name) +
                         "'; accepted: qwen, qwen3, qwen3_nothink, "
                         "glm4, chatglm3, empty (LLaMA-Factory's), qwen2, qwen2.5, chatglm2, none"),
              std::string::npos)
        << error;
    EXPECT_NE(error.find("zerotune renders no other LLaMA-Factory template"), std::string::npos) << error;
  }
  EXPECT_NE(chat_template_warning("chatglm2").find("LLaMA-Factory 0.9.5 dropped its chatglm2 template"),
            std::string::npos);
  EXPECT_EQ(chat_template_warning("qwen3"), "");
  // get_template_and_fix_tokenizer: "Current template does not support `train_on_prompt`."
  EXPECT_NE(make_chat_template("glm4")->train_on_prompt_refusal().find("efficient_eos"), std::string::npos);
  EXPECT_EQ(make_chat_template("qwen")->train_on_prompt_refusal(), "");
  // The converters' checks: pairs of prompt and answer, the system prompt first.
  testing::expect_mentions(render_error("qwen", {{"user", "a"}, {"user", "b"}}, true),
                           {"message 1 is a user turn where an answer belongs"});
  testing::expect_mentions(render_error("qwen", {{"user", "a"}, {"system", "b"}}, true),
                           {"the system prompt comes first or not at all"});
  testing::expect_mentions(render_error("qwen3", {{"user", "a"}, {"assistant", "b"}}, true),
                           {"this conversation ends with an answer"});
}

}  // namespace
}  // namespace zt::models
