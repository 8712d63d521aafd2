// OpenAI request bodies read as OpenAI reads them: its fields, null as absent, unknown fields
// ignored, and a bad field an ApiError 400 naming it.
#include <gtest/gtest.h>

#include "serve/api_error.h"
#include "serve/request_parsing.h"

namespace zt::serve {
namespace {

// The param an ApiError names for `body`, or "no error".
std::string refused_param(const std::string& body) {
  try {
    parse_chat_request(body);
  } catch (const ApiError& error) {
    EXPECT_EQ(error.status(), 400);
    return error.body()["error"]["param"].is_null() ? "" : error.body()["error"]["param"].get<std::string>();
  }
  return "no error";
}

TEST(RequestParsing, ReadsOpenAisFields) {
  const ApiRequest chat = parse_chat_request(R"({
    "model": "m", "messages": [{"role": "developer", "content": "be brief"},
                               {"role": "user", "content": [{"type": "text", "text": "hi "}, {"type": "text", "text": "there"}]}],
    "max_tokens": 5, "max_completion_tokens": 7, "temperature": 0.5, "top_p": 0.9, "seed": 3,
    "stop": "END", "stream": true, "stream_options": {"include_usage": true},
    "user": "someone", "unknown": {"deep": [1]}, "top_k": null})");
  EXPECT_EQ(chat.model, "m");
  ASSERT_EQ(chat.messages.size(), 2u);
  EXPECT_EQ(chat.messages[0].role, "system");
  EXPECT_EQ(chat.messages[1].content, "hi \nthere");
  EXPECT_EQ(chat.sampling.max_tokens, 7);
  EXPECT_EQ(chat.sampling.temperature, 0.5);
  EXPECT_EQ(chat.sampling.top_p, 0.9);
  EXPECT_EQ(chat.sampling.seed, 3u);
  EXPECT_EQ(chat.sampling.stop, std::vector<std::string>{"END"});
  EXPECT_TRUE(chat.stream && chat.include_usage);

  const ApiRequest completion =
      parse_completion_request(R"({"prompt": ["a b"], "stop": ["x", "y"], "temperature": null})");
  EXPECT_EQ(completion.prompt, "a b");
  EXPECT_EQ(completion.sampling.stop, (std::vector<std::string>{"x", "y"}));
  EXPECT_FALSE(completion.sampling.temperature);
  EXPECT_FALSE(completion.stream);
  EXPECT_EQ(completion.sampling.min_tokens, 0);
  EXPECT_FALSE(completion.sampling.ignore_eos);

  const ApiRequest extended =
      parse_completion_request(R"({"prompt": "a", "max_tokens": 9, "min_tokens": 4, "ignore_eos": true})");
  EXPECT_EQ(extended.sampling.min_tokens, 4);
  EXPECT_TRUE(extended.sampling.ignore_eos);
}

// A completion's prompt: a string or token ids, alone or as a list of one; more prompts than
// one are refused, since they would need one choice each.
TEST(RequestParsing, ReadsAPromptOfTokenIds) {
  EXPECT_EQ(parse_completion_request(R"({"prompt": [1, 2, 3]})").prompt_ids, (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(parse_completion_request(R"({"prompt": [[4, 5]]})").prompt_ids, (std::vector<std::int64_t>{4, 5}));
  EXPECT_EQ(parse_completion_request(R"({"prompt": [7]})").prompt_ids, std::vector<std::int64_t>{7});
  EXPECT_TRUE(parse_completion_request(R"({"prompt": "a"})").prompt_ids.empty());
  for (const char* body : {R"({"prompt": [[1], [2]]})", R"({"prompt": ["a", "b"]})", R"({"prompt": []})",
                           R"({"prompt": [[]]})", R"({"prompt": [1, "a"]})", R"({"prompt": [1.5]})"}) {
    try {
      parse_completion_request(body);
      ADD_FAILURE() << body << " was accepted";
    } catch (const ApiError& error) {
      EXPECT_EQ(error.body()["error"]["param"], "prompt") << body;
    }
  }
}

// vLLM's top_k and repetition_penalty, as clients written for vLLM send them in the body.
TEST(RequestParsing, ReadsVllmsSamplingFields) {
  const std::string messages = R"("messages": [{"role": "user", "content": "hi"}])";
  const ApiRequest request = parse_chat_request("{" + messages + R"(, "top_k": 1, "repetition_penalty": 1.3})");
  EXPECT_EQ(request.sampling.top_k, 1);
  EXPECT_EQ(request.sampling.repetition_penalty, 1.3);
  EXPECT_EQ(parse_completion_request(R"({"prompt": "a", "top_k": -1})").sampling.top_k, 0);  // every token
  EXPECT_FALSE(parse_chat_request("{" + messages + R"(, "top_k": null})").sampling.top_k);
  EXPECT_EQ(refused_param("{" + messages + R"(, "top_k": -2})"), "top_k");
  EXPECT_EQ(refused_param("{" + messages + R"(, "top_k": 1.5})"), "top_k");
  EXPECT_EQ(refused_param("{" + messages + R"(, "repetition_penalty": 0})"), "repetition_penalty");
  EXPECT_EQ(refused_param("{" + messages + R"(, "repetition_penalty": 2.5})"), "repetition_penalty");
  EXPECT_EQ(parse_chat_request("{" + messages + R"(, "stop_token_ids": [151645, 7]})").sampling.stop_token_ids,
            (std::vector<std::int64_t>{151645, 7}));
  EXPECT_TRUE(parse_chat_request("{" + messages + R"(, "stop_token_ids": []})").sampling.stop_token_ids.empty());
  EXPECT_EQ(refused_param("{" + messages + R"(, "stop_token_ids": 7})"), "stop_token_ids");
  EXPECT_EQ(refused_param("{" + messages + R"(, "stop_token_ids": ["<|im_end|>"]})"), "stop_token_ids");
}

TEST(RequestParsing, BadFieldsAreRefusedByName) {
  const std::string messages = R"("messages": [{"role": "user", "content": "hi"}])";
  EXPECT_EQ(refused_param("nope"), "");
  EXPECT_EQ(refused_param("{" + messages + ", \"top_p\": 0}"), "top_p");
  EXPECT_EQ(refused_param("{" + messages + ", \"seed\": 1.5}"), "seed");
  EXPECT_EQ(refused_param("{" + messages + ", \"stop\": [\"\"]}"), "stop");
  EXPECT_EQ(refused_param("{" + messages + ", \"stop\": \"\"}"), "stop");  // it ended every answer at once
  EXPECT_EQ(refused_param("{" + messages + ", \"stream_options\": {\"include_usage\": true}}"), "stream_options");
  EXPECT_EQ(refused_param("{" + messages + ", \"n\": \"1\"}"), "n");
  EXPECT_EQ(refused_param("{" + messages + ", \"logprobs\": true}"), "logprobs");
  EXPECT_EQ(refused_param("{" + messages + ", \"presence_penalty\": 0.5}"), "presence_penalty");
  EXPECT_EQ(refused_param("{" + messages + ", \"min_tokens\": -1}"), "min_tokens");
  EXPECT_EQ(refused_param("{" + messages + ", \"max_tokens\": 2, \"min_tokens\": 3}"), "min_tokens");
  EXPECT_EQ(refused_param("{" + messages + ", \"ignore_eos\": 1}"), "ignore_eos");
  EXPECT_EQ(refused_param(R"({"messages": []})"), "messages");
  EXPECT_EQ(refused_param(R"({"messages": [{"content": "hi"}]})"), "messages[0].role");
  EXPECT_EQ(refused_param(R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})"),
            "messages[0].content");
  EXPECT_EQ(refused_param("{" + messages + ", \"n\": 1, \"presence_penalty\": 0, \"logprobs\": false}"), "no error");
}

// vLLM's truncate_prompt_tokens: a positive count or -1, read into the request.
TEST(RequestParsing, TruncatePromptTokensIsACountOrMinusOne) {
  const std::string messages = R"("messages": [{"role": "user", "content": "hi"}])";
  EXPECT_EQ(parse_chat_request("{" + messages + ", \"truncate_prompt_tokens\": 5}").truncate_prompt_tokens, 5);
  EXPECT_EQ(parse_chat_request("{" + messages + ", \"truncate_prompt_tokens\": -1}").truncate_prompt_tokens, -1);
  EXPECT_FALSE(parse_chat_request("{" + messages + "}").truncate_prompt_tokens.has_value());
  EXPECT_EQ(refused_param("{" + messages + ", \"truncate_prompt_tokens\": 0}"), "truncate_prompt_tokens");
  EXPECT_EQ(refused_param("{" + messages + ", \"truncate_prompt_tokens\": -2}"), "truncate_prompt_tokens");
  EXPECT_EQ(refused_param("{" + messages + ", \"truncate_prompt_tokens\": 1.5}"), "truncate_prompt_tokens");
}

// A seed too large for 64 bits is said to be out of range (it parses as a float, but it is a
// whole number); a message other than an assistant's needs its content, as OpenAI requires.
TEST(RequestParsing, AHugeSeedAndAMissingContentAreRefusedForWhatTheyAre) {
  const std::string messages = R"("messages": [{"role": "user", "content": "hi"}])";
  try {
    parse_chat_request("{" + messages + ", \"seed\": 18446744073709551616}");
    ADD_FAILURE() << "a 65-bit seed was taken";
  } catch (const ApiError& error) {
    EXPECT_NE(error.body()["error"]["message"].get<std::string>().find("must fit in 64 bits"), std::string::npos)
        << error.body().dump();
  }
  EXPECT_EQ(refused_param(R"({"messages": [{"role": "user", "content": null}]})"), "messages[0].content");
  EXPECT_EQ(refused_param(R"({"messages": [{"role": "system"}, {"role": "user", "content": "hi"}]})"),
            "messages[0].content");
  EXPECT_EQ(refused_param(R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": null}, )"
                          R"({"role": "user", "content": "again"}]})"),
            "no error");
}

// A whole number written as a float (a Python client's 0.5 * 2048) is that integer, as vLLM's
// pydantic fields take it; a fraction is not an integer, and a number past 64 bits is out of
// range, not "not an integer".
TEST(RequestParsing, AWholeFloatIsAnInteger) {
  const ApiRequest chat = parse_chat_request(
      R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1024.0, "seed": 42.0, "top_k": -1.0})");
  EXPECT_EQ(chat.sampling.max_tokens, 1024);
  EXPECT_EQ(chat.sampling.seed, 42u);
  EXPECT_EQ(chat.sampling.top_k, 0);
  const std::string messages = R"("messages": [{"role": "user", "content": "hi"}])";
  EXPECT_EQ(refused_param("{" + messages + ", \"max_tokens\": 1.5}"), "max_tokens");
  EXPECT_EQ(refused_param("{" + messages + ", \"max_tokens\": 0.0}"), "max_tokens");
  EXPECT_EQ(refused_param("{" + messages + ", \"seed\": 1e30}"), "seed");
}

// n is read as the other integers are: 1.0 is the one choice this server gives, as vLLM takes
// it; a fraction is not an integer and 2.0 is two choices, each refused.
TEST(RequestParsing, AWholeFloatNIsOneChoice) {
  const std::string messages = R"("messages": [{"role": "user", "content": "hi"}])";
  EXPECT_EQ(refused_param("{" + messages + ", \"n\": 1.0}"), "no error");
  EXPECT_EQ(refused_param("{" + messages + ", \"n\": 1.5}"), "n");
  EXPECT_EQ(refused_param("{" + messages + ", \"n\": 2.0}"), "n");
  try {
    parse_chat_request("{" + messages + ", \"n\": 1.5}");
    ADD_FAILURE() << "n 1.5 was taken";
  } catch (const ApiError& error) {
    EXPECT_EQ(error.body()["error"]["message"], "'n' must be an integer");
  }
}

// Fields that would change the answer's meaning and that were once read as unknown: top_logprobs
// (vLLM's and llama.cpp's server tests send it with logprobs) and a completion's suffix.
TEST(RequestParsing, TopLogprobsAndSuffixAreRefusedByName) {
  const std::string messages = R"("messages": [{"role": "user", "content": "hi"}])";
  EXPECT_EQ(refused_param("{" + messages + R"(, "top_logprobs": 5})"), "top_logprobs");
  EXPECT_EQ(refused_param("{" + messages + R"(, "logprobs": false, "top_logprobs": 0})"), "no error");
  try {
    parse_completion_request(R"({"prompt": "def add(a, b):", "suffix": "    return c"})");
    ADD_FAILURE() << "a completion with a suffix was accepted";
  } catch (const ApiError& error) {
    EXPECT_EQ(error.body()["error"]["param"], "suffix");
  }
  EXPECT_EQ(parse_completion_request(R"({"prompt": "a", "suffix": null})").prompt, "a");
  EXPECT_EQ(parse_completion_request(R"({"prompt": "a", "suffix": ""})").prompt, "a");
}

// A completion's logprobs is a count of alternatives (0: the chosen token's alone), which
// lm-evaluation-harness's local-completions sends; refused as a chat's boolean is, saying to send
// null, not false, which is no value a completion's logprobs takes.
TEST(RequestParsing, ACompletionsLogprobsCountIsRefusedInItsOwnTerms) {
  for (const char* body : {R"({"prompt": "a", "logprobs": 0})", R"({"prompt": "a", "logprobs": 5})"}) {
    try {
      parse_completion_request(body);
      ADD_FAILURE() << "taken: " << body;
    } catch (const ApiError& error) {
      EXPECT_EQ(error.body()["error"]["param"], "logprobs");
      const std::string message = error.body()["error"]["message"].get<std::string>();
      EXPECT_NE(message.find("send null"), std::string::npos) << message;
      EXPECT_EQ(message.find("false"), std::string::npos) << message;
    }
  }
  EXPECT_EQ(parse_completion_request(R"({"prompt": "a", "logprobs": null})").prompt, "a");
}

// An answer held to JSON or a schema cannot be given (the sampler follows no grammar): such
// requests (LangChain's with_structured_output, vLLM's and llama.cpp's server tests) are refused
// rather than answered in free text; {"type": "text"} is what every answer is.
TEST(RequestParsing, ResponseFormatIsTextOnly) {
  const std::string messages = R"("messages": [{"role": "user", "content": "hi"}])";
  EXPECT_EQ(refused_param("{" + messages + R"(, "response_format": {"type": "text"}})"), "no error");
  EXPECT_EQ(refused_param("{" + messages + R"(, "response_format": null})"), "no error");
  EXPECT_EQ(refused_param("{" + messages + R"(, "response_format": {"type": "json_object"}})"), "response_format");
  EXPECT_EQ(refused_param("{" + messages + R"(, "response_format": {"type": "json_schema", "json_schema":
      {"name": "foo_test", "schema": {"type": "object", "properties": {"result": {"type": "integer"}}}, "strict": true}}})"),
            "response_format");
  EXPECT_EQ(refused_param("{" + messages + R"(, "response_format": {"type": "sound"}})"), "response_format");
  EXPECT_EQ(refused_param("{" + messages + R"(, "response_format": "json"})"), "response_format");
  EXPECT_EQ(refused_param("{" + messages + R"(, "guided_choice": ["positive", "negative"]})"), "guided_choice");
  EXPECT_EQ(refused_param("{" + messages + R"(, "structured_outputs": {"json": {"type": "object"}}})"),
            "structured_outputs");
  try {
    parse_completion_request(R"({"prompt": "a", "response_format": {"type": "json_object"}})");
    ADD_FAILURE() << "a completion with response_format json_object was accepted";
  } catch (const ApiError& error) {
    EXPECT_EQ(error.body()["error"]["param"], "response_format");
  }
}

// vLLM's chat_template_kwargs: enable_thinking is taken (null: the server's), any other key refused.
TEST(RequestParsing, ChatTemplateKwargsTakeEnableThinking) {
  const std::string messages = R"("messages": [{"role": "user", "content": "hi"}])";
  EXPECT_EQ(parse_chat_request("{" + messages + "}").enable_thinking, std::nullopt);
  EXPECT_EQ(
      parse_chat_request("{" + messages + R"(, "chat_template_kwargs": {"enable_thinking": false}})").enable_thinking,
      std::optional<bool>(false));
  EXPECT_EQ(
      parse_chat_request("{" + messages + R"(, "chat_template_kwargs": {"enable_thinking": null}})").enable_thinking,
      std::nullopt);
  EXPECT_EQ(refused_param("{" + messages + R"(, "chat_template_kwargs": {"enable_thinking": "no"}})"),
            "chat_template_kwargs.enable_thinking");
  EXPECT_EQ(refused_param("{" + messages + R"(, "chat_template_kwargs": {"thinking": true}})"), "chat_template_kwargs");
  EXPECT_EQ(refused_param("{" + messages + R"(, "chat_template_kwargs": [1]})"), "chat_template_kwargs");
}

// vLLM's and SGLang's fields that would change the answer are refused by name, not dropped as
// unknown; their defaults pass, as clients that always send them (vLLM's own tests) do.
TEST(RequestParsing, VllmAndSglangFieldsWithoutAMechanismAreRefused) {
  const std::string messages = R"("messages": [{"role": "user", "content": "hi"}])";
  for (const char* field : {R"("use_beam_search": true)", R"("prompt_logprobs": 1)", R"("prompt_logprobs": 0)",
                            R"("add_generation_prompt": false)", R"("continue_final_message": true)",
                            R"("chat_template": "{{ messages }}")", R"("regex": "[0-9]+")", R"("ebnf": "root ::= 'a'")",
                            R"("json_schema": "{}")", R"("stop_regex": "a+")"}) {
    const std::string name = std::string(field).substr(1, std::string(field).find('"', 1) - 1);
    EXPECT_EQ(refused_param("{" + messages + ", " + field + "}"), name) << field;
  }
  EXPECT_EQ(refused_param("{" + messages +
                          R"(, "use_beam_search": false, "prompt_logprobs": null, "add_generation_prompt": true,
                               "continue_final_message": false, "chat_template": null})"),
            "no error");
  // A completion has no chat template: only the fields of both are read there.
  EXPECT_NO_THROW(parse_completion_request(R"({"prompt": "a", "add_generation_prompt": false})"));
  EXPECT_THROW(parse_completion_request(R"({"prompt": "a", "use_beam_search": true})"), ApiError);
  // SGLang's no_stop_trim is vLLM's include_stop_str_in_output.
  EXPECT_TRUE(parse_chat_request("{" + messages + R"(, "no_stop_trim": true})").sampling.include_stop_str_in_output);
  EXPECT_FALSE(parse_chat_request("{" + messages + R"(, "no_stop_trim": false})").sampling.include_stop_str_in_output);
}

// An assistant message's refusal part (openai-python's assistant content parts) is its text.
TEST(RequestParsing, ARefusalPartIsText) {
  const ApiRequest chat = parse_chat_request(R"({"messages": [{"role": "user", "content": "hi"},
    {"role": "assistant", "content": [{"type": "refusal", "refusal": "I can't."}, {"type": "text", "text": " Sorry."}]},
    {"role": "user", "content": "ok"}]})");
  EXPECT_EQ(chat.messages[1].content, "I can't.\n Sorry.");
  EXPECT_EQ(refused_param(R"({"messages": [{"role": "assistant", "content": [{"type": "refusal", "text": "x"}]}]})"),
            "messages[0].content");
}

// A content of several text parts is one text with a newline between parts, as vLLM joins them
// for templates that print the content as a string (every template here): "Describe:" and
// "the text" are not run together into "Describe:the text".
TEST(RequestParsing, TextPartsAreJoinedByNewlines) {
  const ApiRequest chat = parse_chat_request(R"({"messages": [{"role": "user", "content": [
    {"type": "text", "text": "Describe:"}, {"type": "text", "text": "the text"}, {"type": "text", "text": ""}]}]})");
  EXPECT_EQ(chat.messages[0].content, "Describe:\nthe text\n");
  EXPECT_EQ(parse_chat_request(R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "one"}]}]})")
                .messages[0]
                .content,
            "one");
  EXPECT_EQ(parse_chat_request(R"({"messages": [{"role": "assistant", "content": []}]})").messages[0].content, "");
}

// An assistant message's reasoning, as this server answers it (reasoning_content) and as newer
// vLLM names it (reasoning), sent back in the conversation: Qwen3's template writes it in the
// think block of the answers after the last query (a tool-calling turn), so it is kept apart
// as the template reads it, not dropped.
TEST(RequestParsing, AnAnswersReasoningIsRead) {
  const ApiRequest chat = parse_chat_request(R"({"messages": [{"role": "user", "content": "weather?"},
    {"role": "assistant", "content": null, "reasoning_content": "Call the tool.",
     "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]},
    {"role": "tool", "content": "sunny"},
    {"role": "assistant", "content": "Sunny.", "reasoning": "It said sunny."},
    {"role": "assistant", "content": "x", "reasoning_content": null}]})");
  EXPECT_FALSE(chat.messages[0].reasoning_content);
  EXPECT_EQ(chat.messages[1].reasoning_content, "Call the tool.");
  EXPECT_EQ(chat.messages[3].reasoning_content, "It said sunny.");
  EXPECT_FALSE(chat.messages[4].reasoning_content);
  EXPECT_EQ(refused_param(R"({"messages": [{"role": "assistant", "content": "x", "reasoning_content": 1}]})"),
            "messages[0].reasoning_content");
}

TEST(RequestParsing, AnEmptyBodySaysSo) {
  for (const std::string body : {"", "  \n"}) {
    try {
      parse_chat_request(body);
      ADD_FAILURE() << "an empty body was accepted";
    } catch (const ApiError& error) {
      EXPECT_EQ(error.status(), 400);
      EXPECT_NE(std::string(error.what()).find("the request body is empty"), std::string::npos) << error.what();
    }
  }
}

// tools as the template prints them (the function's keys in OpenAI's order, the parameters'
// as sent), tool_choice auto or none, and earlier calls and results in the messages.
TEST(RequestParsing, ReadsToolsAndToolCalls) {
  const ApiRequest chat = parse_chat_request(R"({
    "messages": [{"role": "user", "content": "weather in Paris?"},
                 {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
                    "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
                 {"role": "tool", "tool_call_id": "call_1", "content": "18 C"}],
    "tools": [{"function": {"parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                           "required": ["city"]},
                            "description": "the weather", "name": "get_weather", "strict": true},
               "type": "function"}],
    "parallel_tool_calls": false})");
  ASSERT_EQ(chat.tools.tools.size(), 1u);
  EXPECT_EQ(chat.tools.tools[0],
            R"({"type":"function","function":{"name":"get_weather","description":"the weather",)"
            R"("parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}})");
  EXPECT_TRUE(chat.tools.parse_calls);
  EXPECT_FALSE(chat.tools.parallel_tool_calls);
  ASSERT_EQ(chat.messages.size(), 3u);
  EXPECT_EQ(chat.messages[1].content, "");
  ASSERT_EQ(chat.messages[1].tool_calls.size(), 1u);
  EXPECT_EQ(chat.messages[1].tool_calls[0].name, "get_weather");
  EXPECT_EQ(chat.messages[1].tool_calls[0].arguments, R"({"city": "Paris"})");
  EXPECT_EQ(chat.messages[2].role, "tool");
  EXPECT_EQ(chat.messages[2].content, "18 C");

  // tool_choice none: the model is not shown the tools, and nothing is parsed.
  const ApiRequest none = parse_chat_request(
      R"({"messages": [{"role": "user", "content": "hi"}], "tool_choice": "none",
          "tools": [{"type": "function", "function": {"name": "f"}}]})");
  EXPECT_TRUE(none.tools.tools.empty());
  EXPECT_FALSE(none.tools.parse_calls);
  EXPECT_FALSE(
      parse_chat_request(R"({"messages": [{"role": "user", "content": "hi"}], "tools": []})").tools.parse_calls);
}

TEST(RequestParsing, BadToolFieldsAreRefusedByName) {
  const std::string messages = R"("messages": [{"role": "user", "content": "hi"}])";
  const std::string tools = R"("tools": [{"type": "function", "function": {"name": "f"}}])";
  EXPECT_EQ(refused_param("{" + messages + ", " + tools + ", \"tool_choice\": \"required\"}"), "tool_choice");
  EXPECT_EQ(refused_param("{" + messages + ", " + tools +
                          R"(, "tool_choice": {"type": "function", "function": {"name": "f"}}})"),
            "tool_choice");
  EXPECT_EQ(refused_param("{" + messages + ", \"tool_choice\": \"auto\"}"), "tool_choice");
  EXPECT_EQ(refused_param("{" + messages + R"(, "tools": {"name": "f"}})"), "tools");
  EXPECT_EQ(refused_param("{" + messages + R"(, "tools": [{"type": "code_interpreter"}]})"), "tools[0].type");
  EXPECT_EQ(refused_param("{" + messages + R"(, "tools": [{"type": "function", "function": {"name": ""}}]})"),
            "tools[0].function.name");
  EXPECT_EQ(refused_param("{" + messages + R"(, "tools": [{"function": {"name": "f", "parameters": []}}]})"),
            "tools[0].function.parameters");
  EXPECT_EQ(refused_param("{" + messages + ", " + tools + ", \"parallel_tool_calls\": 1}"), "parallel_tool_calls");
  EXPECT_EQ(refused_param(R"({"messages": [{"role": "assistant", "tool_calls": [{"type": "function",
              "function": {"name": "f", "arguments": "{not json"}}]}]})"),
            "messages[0].tool_calls[0].function.arguments");
  EXPECT_EQ(refused_param(R"({"messages": [{"role": "user", "tool_calls": [{"function": {"name": "f"}}]}]})"),
            "messages[0].tool_calls");
  EXPECT_EQ(refused_param("{" + messages + ", " + tools + ", \"tool_choice\": \"auto\"}"), "no error");
}

// OpenAI's deprecated function calling, as older clients send it: refused by name, since read
// as unknown fields the answer would come without the model having seen the functions.
TEST(RequestParsing, DeprecatedFunctionCallingIsRefusedByName) {
  const std::string messages = R"("messages": [{"role": "user", "content": "weather in Paris?"}])";
  const std::string functions = R"("functions": [{"name": "get_weather", "parameters": {"type": "object"}}])";
  EXPECT_EQ(refused_param("{" + messages + ", " + functions + "}"), "functions");
  EXPECT_EQ(refused_param("{" + messages + ", " + functions + R"(, "function_call": "auto"})"), "functions");
  EXPECT_EQ(refused_param("{" + messages + R"(, "function_call": {"name": "get_weather"}})"), "function_call");
  EXPECT_EQ(refused_param("{" + messages + R"(, "functions": null, "function_call": null})"), "no error");
}

}  // namespace
}  // namespace zt::serve
