// vLLM's extensions to the OpenAI API as the served tiny model answers them: reasoning split
// off as reasoning_content for a thinking template (on by default, off with
// --reasoning_parser none or enable_thinking false), min_p reaching the sampler and refused out
// of [0, 1], include_stop_str_in_output keeping the stop string, truncate_prompt_tokens
// keeping the prompt's last tokens, and CORS (vLLM's
// --allowed_origins and the like): preflights answered, Access-Control-Allow-Origin on
// answers, errors and streams, a configured origin list honoured.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/serve/serve_test_util.h"

namespace {

using namespace zt::testing::serve;

// A folder of its own for a server's log.
fs::path made(const fs::path& folder) {
  fs::create_directories(folder);
  return folder;
}

// The tiny model with QwQ's chat template (recognised from its text, as zerotune reads a
// model's own template), whose generation prompt opens the think block ("<think>\n"): the
// whole answer of the tiny model, which never writes "</think>", is reasoning.
std::string thinking_model(const fs::path& folder) {
  const fs::path model = made(folder / "tiny-qwq");
  for (const auto& entry : fs::directory_iterator(kModel))
    fs::copy_file(entry.path(), model / entry.path().filename(), fs::copy_options::overwrite_existing);
  std::ofstream(model / "chat_template.jinja")
      << "{%- for message in messages %}{{ '<|im_start|>' + message.role + '\\n' }}"
         "{%- if message.role == 'assistant' %}{{ message.content.split('</think>')[-1] }}"
         "{%- else %}{{ message.content }}{%- endif %}{{ '<|im_end|>\\n' }}{%- endfor %}"
         "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n<think>\\n' }}{%- endif %}";
  return model.string();
}

class ServeExtensions : public SuiteServer<ServeExtensions> {
 public:
  static constexpr const char* kName = "serve_extensions_test";
  static std::unique_ptr<ServerProcess> start_server(const fs::path& folder) {
    return std::make_unique<ServerProcess>(made(folder / "split"), std::vector<std::string>{}, thinking_model(folder));
  }
};

const json kChat = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 12}, {"temperature", 0}};

// What the streamed deltas add up to, reasoning and content apart.
struct Deltas {
  std::string reasoning, content;
};
Deltas deltas_of(const Streamed& streamed) {
  Deltas out;
  for (const std::string& event : streamed.events) {
    if (event == "[DONE]") continue;
    const json chunk = json::parse(event);
    if (chunk["choices"].empty()) continue;
    const json& delta = chunk["choices"][0]["delta"];
    if (delta.contains("reasoning_content")) out.reasoning += delta["reasoning_content"].get<std::string>();
    if (delta.contains("content")) out.content += delta["content"].get<std::string>();
  }
  return out;
}

TEST_F(ServeExtensions, AThinkingTemplatesAnswerComesAsReasoningContent) {
  ServerProcess plain(made(suite_folder() / "none"), {"--reasoning_parser", "none"},
                      thinking_model(made(suite_folder() / "none-model")));
  ASSERT_NE(plain.port(), 0);
  httplib::Client split_client = server().client(), plain_client = plain.client();
  const json unsplit = post(plain_client, "/v1/chat/completions", kChat)["choices"][0]["message"];
  EXPECT_FALSE(unsplit.contains("reasoning_content")) << unsplit.dump();
  const std::string text = unsplit["content"];
  ASSERT_FALSE(text.empty());
  ASSERT_EQ(text.find("</think>"), std::string::npos) << text;

  const json message = post(split_client, "/v1/chat/completions", kChat)["choices"][0]["message"];
  EXPECT_EQ(message["reasoning_content"], text) << message.dump();
  EXPECT_TRUE(message["content"].is_null()) << message.dump();
  const Deltas streamed = deltas_of(stream(split_client, "/v1/chat/completions", kChat));
  EXPECT_EQ(streamed.reasoning, text);
  EXPECT_EQ(streamed.content, "");  // the role chunk's "" only
  const Deltas plain_streamed = deltas_of(stream(plain_client, "/v1/chat/completions", kChat));
  EXPECT_EQ(plain_streamed.content, text);
  EXPECT_EQ(plain_streamed.reasoning, "");

  // Completions are left as they are.
  const json completion_body = {{"prompt", "hi"}, {"max_tokens", 8}, {"temperature", 0}};
  const json completion = post(split_client, "/v1/completions", completion_body)["choices"][0];
  EXPECT_FALSE(completion.contains("reasoning_content"));
  EXPECT_EQ(completion["text"], post(plain_client, "/v1/completions", completion_body)["choices"][0]["text"]);
}

// Qwen3's hybrid template: thinking on, the answer is split (no block here: content, null
// reasoning); enable_thinking false renders qwen3_nothink, whose answers are not split.
TEST_F(ServeExtensions, EnableThinkingFalseLeavesTheAnswerUnsplit) {
  ServerProcess qwen3(made(suite_folder() / "qwen3"), {"--template", "qwen3"});
  ASSERT_NE(qwen3.port(), 0);
  httplib::Client client = qwen3.client();
  const json thinking = post(client, "/v1/chat/completions", kChat)["choices"][0]["message"];
  EXPECT_TRUE(thinking.contains("reasoning_content")) << thinking.dump();
  EXPECT_TRUE(thinking["reasoning_content"].is_null()) << thinking.dump();
  EXPECT_TRUE(thinking["content"].is_string());
  json off = kChat;
  off["chat_template_kwargs"] = {{"enable_thinking", false}};
  const json not_thinking = post(client, "/v1/chat/completions", off)["choices"][0]["message"];
  EXPECT_FALSE(not_thinking.contains("reasoning_content")) << not_thinking.dump();
  EXPECT_TRUE(not_thinking["content"].is_string());
}

// min_p 1 keeps only the likeliest token, so a sampled answer is the greedy one; the same
// sampling without it is not (the tiny model's distribution is nearly flat).
TEST_F(ServeExtensions, MinPReachesTheSamplerAndIsCheckedTo01) {
  httplib::Client client = server().client();
  json greedy = {{"prompt", "hi"}, {"max_tokens", 12}, {"temperature", 0}};
  const std::string greedy_text = post(client, "/v1/completions", greedy)["choices"][0]["text"];
  json sampled = greedy;
  sampled["temperature"] = 1.0;
  sampled["seed"] = 7;
  EXPECT_NE(post(client, "/v1/completions", sampled)["choices"][0]["text"], greedy_text);
  sampled["min_p"] = 1.0;
  EXPECT_EQ(post(client, "/v1/completions", sampled)["choices"][0]["text"], greedy_text);
  const Streamed streamed = stream(client, "/v1/completions", sampled);
  EXPECT_EQ(streamed.text, greedy_text);

  for (const json& bad : {json(1.5), json(-0.1), json("0.1")}) {
    json body = kChat;
    body["min_p"] = bad;
    const json error = post(client, "/v1/chat/completions", body, 400)["error"];
    EXPECT_EQ(error["param"], "min_p") << error.dump();
    EXPECT_NE(error["message"].get<std::string>().find("min_p"), std::string::npos) << error.dump();
  }
  json bad_include = kChat;
  bad_include["include_stop_str_in_output"] = "yes";
  EXPECT_EQ(post(client, "/v1/chat/completions", bad_include, 400)["error"]["param"], "include_stop_str_in_output");
}

TEST_F(ServeExtensions, IncludeStopStrInOutputKeepsTheStopString) {
  httplib::Client client = server().client();
  json body = {{"prompt", "hi"}, {"max_tokens", 16}, {"temperature", 0}};
  const std::string full = post(client, "/v1/completions", body)["choices"][0]["text"];
  std::size_t at = full.size() / 2;
  auto letter = [&](std::size_t i) { return i < full.size() && std::isalpha(static_cast<unsigned char>(full[i])); };
  while (at < full.size() && !(letter(at) && letter(at + 1))) ++at;
  ASSERT_LT(at, full.size()) << "no two letters in the second half of: " << full;
  const std::string stop = full.substr(at, 2);
  const std::size_t first = full.find(stop);
  body["stop"] = {"never in the answer", stop};
  EXPECT_EQ(post(client, "/v1/completions", body)["choices"][0]["text"], full.substr(0, first));
  body["include_stop_str_in_output"] = false;
  EXPECT_EQ(stream(client, "/v1/completions", body).text, full.substr(0, first));
  body["include_stop_str_in_output"] = true;
  const json kept = post(client, "/v1/completions", body)["choices"][0];
  EXPECT_EQ(kept["text"], full.substr(0, first + stop.size()));
  EXPECT_EQ(kept["finish_reason"], "stop");
  const Streamed streamed = stream(client, "/v1/completions", body);
  EXPECT_EQ(streamed.text, full.substr(0, first + stop.size()));
  EXPECT_EQ(streamed.finish_reason, "stop");
}

// vLLM's truncate_prompt_tokens keeps the prompt's last tokens: the answer and the usage are
// those of the shorter prompt; a prompt already that short is unchanged.
TEST_F(ServeExtensions, TruncatePromptTokensKeepsThePromptsLastTokens) {
  httplib::Client client = server().client();
  json body = {
      {"prompt", {17, 23, 5, 42, 8, 11}}, {"max_tokens", 6}, {"temperature", 0}, {"truncate_prompt_tokens", 2}};
  const json truncated = post(client, "/v1/completions", body);
  json last_two = {{"prompt", {8, 11}}, {"max_tokens", 6}, {"temperature", 0}};
  const json expected = post(client, "/v1/completions", last_two);
  EXPECT_EQ(truncated["choices"][0]["text"], expected["choices"][0]["text"]);
  EXPECT_EQ(truncated["usage"]["prompt_tokens"], 2);
  body["truncate_prompt_tokens"] = 10;
  EXPECT_EQ(post(client, "/v1/completions", body)["usage"]["prompt_tokens"], 6);
  body["truncate_prompt_tokens"] = -1;
  EXPECT_EQ(post(client, "/v1/completions", body)["usage"]["prompt_tokens"], 6) << "the context holds it all";
}

httplib::Result preflight(httplib::Client& client, const std::string& origin, const std::string& method,
                          const std::string& headers = "") {
  httplib::Headers asked = {{"Origin", origin}, {"Access-Control-Request-Method", method}};
  if (!headers.empty()) asked.emplace("Access-Control-Request-Headers", headers);
  return client.Options("/v1/chat/completions", asked);
}

// vLLM's defaults: every origin, method and header.
TEST_F(ServeExtensions, CorsPreflightsAndAnswersCarryTheHeaders) {
  httplib::Client client = server().client();
  const httplib::Result asked = preflight(client, "http://page.example", "POST", "content-type,authorization");
  ASSERT_TRUE(asked);
  EXPECT_EQ(asked->status, 200) << asked->body;
  EXPECT_EQ(asked->get_header_value("Access-Control-Allow-Origin"), "*");
  EXPECT_NE(asked->get_header_value("Access-Control-Allow-Methods").find("POST"), std::string::npos);
  EXPECT_EQ(asked->get_header_value("Access-Control-Allow-Headers"), "content-type,authorization");
  EXPECT_EQ(asked->get_header_value("Access-Control-Max-Age"), "600");

  const httplib::Headers origin = {{"Origin", "http://page.example"}};
  const httplib::Result answer = client.Post("/v1/chat/completions", origin, kChat.dump(), "application/json");
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->status, 200);
  EXPECT_EQ(answer->get_header_value("Access-Control-Allow-Origin"), "*");
  json streamed_body = kChat;
  streamed_body["stream"] = true;
  const httplib::Result streamed =
      client.Post("/v1/chat/completions", origin, streamed_body.dump(), "application/json");
  ASSERT_TRUE(streamed);
  EXPECT_EQ(streamed->get_header_value("Content-Type"), "text/event-stream");
  EXPECT_EQ(streamed->get_header_value("Access-Control-Allow-Origin"), "*");
  const httplib::Result error = client.Post("/v1/chat/completions", origin, "{}", "application/json");
  ASSERT_TRUE(error);
  EXPECT_EQ(error->status, 400);
  EXPECT_EQ(error->get_header_value("Access-Control-Allow-Origin"), "*");
  const httplib::Result models = client.Get("/v1/models", origin);
  ASSERT_TRUE(models);
  EXPECT_EQ(models->get_header_value("Access-Control-Allow-Origin"), "*");
  // A request from no other origin (no Origin header) gets no CORS headers.
  const httplib::Result same_origin = client.Get("/v1/models");
  ASSERT_TRUE(same_origin);
  EXPECT_FALSE(same_origin->has_header("Access-Control-Allow-Origin"));
}

TEST_F(ServeExtensions, CorsHonoursTheConfiguredOrigins) {
  ServerProcess listed(made(suite_folder() / "cors"),
                       {"--allowed_origins", R"(["http://good.example"])", "--allowed_methods", "GET,POST",
                        "--allowed_headers", "Authorization", "--allow_credentials"});
  ASSERT_NE(listed.port(), 0);
  httplib::Client client = listed.client();
  const httplib::Result good = preflight(client, "http://good.example", "POST", "authorization, content-type");
  ASSERT_TRUE(good);
  EXPECT_EQ(good->status, 200) << good->body;
  EXPECT_EQ(good->get_header_value("Access-Control-Allow-Origin"), "http://good.example");
  EXPECT_EQ(good->get_header_value("Access-Control-Allow-Credentials"), "true");
  EXPECT_EQ(good->get_header_value("Access-Control-Allow-Methods"), "GET, POST");
  EXPECT_EQ(good->get_header_value("Vary"), "Origin");

  const httplib::Result evil = preflight(client, "http://evil.example", "POST");
  ASSERT_TRUE(evil);
  EXPECT_EQ(evil->status, 400);
  EXPECT_EQ(evil->body, "Disallowed CORS origin");
  EXPECT_FALSE(evil->has_header("Access-Control-Allow-Origin"));
  const httplib::Result method = preflight(client, "http://good.example", "DELETE");
  ASSERT_TRUE(method);
  EXPECT_EQ(method->status, 400);
  EXPECT_EQ(method->body, "Disallowed CORS method");
  const httplib::Result header = preflight(client, "http://good.example", "POST", "x-secret");
  ASSERT_TRUE(header);
  EXPECT_EQ(header->body, "Disallowed CORS headers");

  const httplib::Result allowed =
      client.Post("/v1/chat/completions", {{"Origin", "http://good.example"}}, kChat.dump(), "application/json");
  ASSERT_TRUE(allowed);
  EXPECT_EQ(allowed->status, 200);
  EXPECT_EQ(allowed->get_header_value("Access-Control-Allow-Origin"), "http://good.example");
  const httplib::Result other =
      client.Post("/v1/chat/completions", {{"Origin", "http://evil.example"}}, kChat.dump(), "application/json");
  ASSERT_TRUE(other);
  EXPECT_FALSE(other->has_header("Access-Control-Allow-Origin"));
}

}  // namespace
