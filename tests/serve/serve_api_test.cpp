// zerotune serve's HTTP surface as clients meet it: an empty body and a wrong method answered
// as OpenAI answers them (400 saying the body is empty; 405 with Allow), ids that differ across
// server processes, and `tools` accepted and rendered through the chat template (the prompt
// the server counts is the template's rendering with the tools and the earlier calls), while
// tool_choice values it cannot honour and templates without Qwen's call format are refused.
// The tiny model does not write tool calls; reading them out of answers is tested on text in
// tool_calls_test.cpp.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "tests/serve/serve_test_util.h"
#include "text/chat_template/chat_template.h"
#include "text/tokenizer/tokenizer.h"

namespace {

using namespace zt::testing::serve;

// The tiny model with a context of 1024 positions (RoPE takes any): Qwen's tools block alone
// is longer than its 256 at this vocabulary's few characters a token.
std::string long_context_model(const fs::path& folder) {
  const fs::path model = folder / "tiny-qwen-1024";
  fs::create_directories(model);
  for (const auto& entry : fs::directory_iterator(kModel))
    fs::copy_file(entry.path(), model / entry.path().filename(), fs::copy_options::overwrite_existing);
  json config = json::parse(zt::testing::read_text(model / "config.json"));
  config["max_position_embeddings"] = 1024;
  std::ofstream(model / "config.json") << config.dump(2);
  return model.string();
}

class ServeApi : public SuiteServer<ServeApi> {
 public:
  static constexpr const char* kName = "serve_api_test";
  // The tiny model with a longer context, served with the qwen template.
  static std::unique_ptr<ServerProcess> start_server(const fs::path& folder) {
    return std::make_unique<ServerProcess>(folder, std::vector<std::string>{"--template", "qwen"},
                                           long_context_model(folder));
  }
};

json error_of(const httplib::Result& result) {
  const json body = json::parse(result->body, nullptr, false);
  EXPECT_TRUE(body.contains("error")) << result->body;
  return body.value("error", json::object());
}

TEST_F(ServeApi, AnEmptyBodyIsA400SayingSo) {
  httplib::Client client = server().client();
  // Content-Length 0, and no Content-Length at all (cpp-httplib cannot read a body then).
  const httplib::Result empty = client.Post("/v1/chat/completions", "", "application/json");
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->status, 400);
  EXPECT_NE(error_of(empty)["message"].get<std::string>().find("the request body is empty"), std::string::npos)
      << empty->body;
  httplib::Request request;
  request.method = "POST";
  request.path = "/v1/completions";
  httplib::Response response;
  httplib::Error error = httplib::Error::Success;
  ASSERT_TRUE(client.send(request, response, error)) << httplib::to_string(error);
  EXPECT_EQ(response.status, 400);
  const json body = json::parse(response.body, nullptr, false);
  ASSERT_TRUE(body.contains("error")) << response.body;
  EXPECT_NE(body["error"]["message"].get<std::string>().find("the request body is empty"), std::string::npos)
      << response.body;
  EXPECT_EQ(body["error"]["message"].get<std::string>().find("no route"), std::string::npos) << response.body;
}

TEST_F(ServeApi, AWrongMethodIsA405WithAllow) {
  httplib::Client client = server().client();
  const httplib::Result get = client.Get("/v1/chat/completions");
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 405);
  EXPECT_EQ(get->get_header_value("Allow"), "POST");
  EXPECT_EQ(error_of(get)["type"], "invalid_request_error");
  EXPECT_NE(error_of(get)["message"].get<std::string>().find("GET /v1/chat/completions"), std::string::npos);
  const httplib::Result post = client.Post("/v1/models", "{}", "application/json");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  EXPECT_EQ(post->get_header_value("Allow"), "GET, HEAD");
  const httplib::Result missing = client.Get("/v1/no/such/route");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_TRUE(missing->get_header_value("Allow").empty());
}

// Two server processes: their first answers' ids are random, not a counter restarting at 0.
TEST_F(ServeApi, IdsDifferAcrossProcesses) {
  const fs::path other_folder = suite_folder() / "other";
  fs::create_directories(other_folder);
  ServerProcess other(other_folder);
  const json body = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 1}};
  httplib::Client first_client = server().client(), other_client = other.client();
  const std::string first = post(first_client, "/v1/chat/completions", body)["id"];
  const std::string second = post(other_client, "/v1/chat/completions", body)["id"];
  EXPECT_TRUE(std::regex_match(first, std::regex("chatcmpl-[0-9a-f]{24}"))) << first;
  EXPECT_TRUE(std::regex_match(second, std::regex("chatcmpl-[0-9a-f]{24}"))) << second;
  EXPECT_NE(first, second);
  const std::string completion = post(other_client, "/v1/completions", {{"prompt", "a"}, {"max_tokens", 1}})["id"];
  EXPECT_TRUE(std::regex_match(completion, std::regex("cmpl-[0-9a-f]{24}"))) << completion;
}

const json kTools = json::parse(R"([{"type": "function", "function": {"name": "get_weather",
    "description": "The weather in a city", "parameters": {"type": "object",
    "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])");

json tool_conversation() {
  return json::parse(R"([{"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "18 C and sunny"}])");
}

// The prompt's tokens as the qwen template renders the conversation with these tools.
std::size_t template_tokens(const std::vector<std::string>& tools) {
  const auto tokenizer = zt::models::load_tokenizer(kModel);  // the long-context copy's is the same
  const auto chat_template = zt::models::make_chat_template("qwen");
  const std::vector<zt::models::ChatMessage> messages = {{"user", "Weather in Paris?"},
                                                         {"assistant", "", {{"get_weather", R"({"city": "Paris"})"}}},
                                                         {"tool", "18 C and sunny"}};
  return chat_template->encode(*tokenizer, messages, /*add_generation_prompt=*/true, tools).ids.size();
}

TEST_F(ServeApi, ToolsAndToolCallsAreRenderedThroughTheTemplate) {
  httplib::Client client = server().client();
  json body = {{"messages", tool_conversation()}, {"tools", kTools}, {"max_tokens", 4}, {"temperature", 0}};
  const json answer = post(client, "/v1/chat/completions", body);
  // As the server passes it to the template: OpenAI's key order for the function, the
  // parameters' as sent (this client's json sorts them).
  const std::string tool =
      R"({"type":"function","function":{"name":"get_weather","description":"The weather in a city",)"
      R"("parameters":{"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"}}})";
  EXPECT_EQ(answer["usage"]["prompt_tokens"], template_tokens({tool})) << answer.dump();
  EXPECT_GT(template_tokens({tool}), template_tokens({}) + 100) << "the tools block is in the prompt";
  // The tiny model answers in text: content and finish_reason as without tools.
  const json& choice = answer["choices"][0];
  EXPECT_TRUE(choice["message"]["content"].is_string()) << answer.dump();
  EXPECT_TRUE(choice["finish_reason"] == "stop" || choice["finish_reason"] == "length") << answer.dump();
  // Streamed, the same answer comes through the tool-call parser.
  const Streamed streamed = stream(client, "/v1/chat/completions", body);
  EXPECT_EQ(streamed.text, choice["message"]["content"].get<std::string>());
  EXPECT_EQ(streamed.finish_reason, choice["finish_reason"].get<std::string>());

  // tool_choice none: the tools stay out of the prompt.
  body["tool_choice"] = "none";
  EXPECT_EQ(post(client, "/v1/chat/completions", body)["usage"]["prompt_tokens"], template_tokens({}));
}

TEST_F(ServeApi, ToolRequestsItCannotHonourAreRefused) {
  httplib::Client client = server().client();
  json body = {{"messages", tool_conversation()}, {"tools", kTools}, {"tool_choice", "required"}};
  json error = post(client, "/v1/chat/completions", body, 400)["error"];
  EXPECT_EQ(error["param"], "tool_choice");
  EXPECT_NE(error["message"].get<std::string>().find("cannot force the model to call a tool"), std::string::npos);
  body.erase("tool_choice");
  body["messages"][1]["tool_calls"][0]["function"]["arguments"] = "{city: Paris";
  error = post(client, "/v1/chat/completions", body, 400)["error"];
  EXPECT_EQ(error["param"], "messages[1].tool_calls[0].function.arguments");

  // A template that writes calls in another format: refused rather than sent back as text.
  const fs::path glm_folder = suite_folder() / "glm";
  fs::create_directories(glm_folder);
  ServerProcess glm(glm_folder, {"--template", "glm4"});
  httplib::Client glm_client = glm.client();
  error = post(glm_client, "/v1/chat/completions",
               {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"tools", kTools}}, 400)["error"];
  EXPECT_EQ(error["param"], "tools");
  EXPECT_NE(error["message"].get<std::string>().find("'glm4'"), std::string::npos) << error.dump();
}

}  // namespace
