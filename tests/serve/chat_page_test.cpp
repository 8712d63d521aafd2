// zerotune serve's chat page (GET /) in a real browser: Debian's chromium, headless, opens the
// page with the test hook of its query string (the settings it names, and a message sent on
// load), and the DOM, read once the stream has ended, holds the streamed answer, which must
// equal the greedy answer of a whole (non-streamed) request for the same conversation; Stop
// pressed mid-answer keeps its start and cancels the request; the thinking setting reaches the
// request; a <think> block is shown apart; a second message goes with the conversation. Also:
// the page is self-contained HTML, and other methods on / get 405. Skips, saying so, only when
// chromium is not installed (scripts/setup.sh installs it for scripts/test.sh).
#include <gtest/gtest.h>

#include "models/hub/repo_id.h"
#include "tests/serve/headless_chromium.h"
#include "tests/serve/serve_test_util.h"

namespace {

using namespace zt::testing::serve;

std::string url_encoded(const std::string& text) { return zt::models::hub::url_escaped(text, false); }

constexpr const char* kNoChromium = "chromium is not installed (scripts/setup.sh installs it for the tests)";

// The last assistant message the page shows: its data-state (streaming, done, stopped, error)
// and its text.
constexpr const char* kLastAnswer = R"js((() => {
  const boxes = document.querySelectorAll(".message.assistant");
  const box = boxes[boxes.length - 1];
  return box ? { state: box.dataset.state, text: box.querySelector(".content").textContent } : null;
})())js";

// The same, pressing Stop first if the answer has begun and is still streaming.
constexpr const char* kStopOnceAnswering = R"js((() => {
  const boxes = document.querySelectorAll(".message.assistant");
  const box = boxes[boxes.length - 1];
  if (!box) return null;
  const text = box.querySelector(".content").textContent;
  if (box.dataset.state === "streaming" && text !== "") document.getElementById("stop_button").click();
  return { state: box.dataset.state, text };
})())js";

class ChatPage : public SuiteServer<ChatPage> {
 public:
  static constexpr const char* kName = "chat_page_test";

 protected:
  // What the page shows once its answer to the query's message has ended (or after 60 s),
  // opened in a headless chromium of its own; with `press_stop`, Stop is pressed as soon as
  // the answer has begun.
  static json answer_shown(const std::string& chromium, const std::string& query, bool press_stop = false,
                           int port = 0) {
    const std::string run = std::to_string(++runs_);
    zt::testing::HeadlessChromium browser(chromium, suite_folder() / ("profile_" + run),
                                          suite_folder() / ("chromium_" + run + ".log"));
    if (!browser.started()) {
      ADD_FAILURE() << "cannot start " << chromium;
      return {};
    }
    const std::string url = "http://127.0.0.1:" + std::to_string(port ? port : server().port()) + "/?" + query;
    const std::string error = browser.open(url);
    EXPECT_EQ(error, "") << url;
    json shown;
    for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
         std::chrono::steady_clock::now() < deadline;
         std::this_thread::sleep_for(std::chrono::milliseconds(press_stop ? 5 : 100))) {
      shown = browser.evaluate(press_stop ? kStopOnceAnswering : kLastAnswer);
      if (shown.is_object() && shown["state"] != "streaming") break;
    }
    EXPECT_TRUE(shown.is_object()) << "the page shows no answer: " << url;
    return shown.is_object() ? shown : json{{"state", ""}, {"text", ""}};
  }

  // The server's page at `path` open in a headless chromium of its own (profile and log named
  // by `name`); null, the failure said, where the server or the browser did not start or the
  // page did not open.
  static std::unique_ptr<zt::testing::HeadlessChromium> open_page(const std::string& chromium, const std::string& name,
                                                                  const std::string& path) {
    if (server().port() == 0) {
      ADD_FAILURE() << "the server did not start";
      return nullptr;
    }
    auto browser = std::make_unique<zt::testing::HeadlessChromium>(chromium, suite_folder() / ("profile_" + name),
                                                                   suite_folder() / ("chromium_" + name + ".log"));
    if (!browser->started()) {
      ADD_FAILURE() << "cannot start " << chromium;
      return nullptr;
    }
    const std::string error = browser->open("http://127.0.0.1:" + std::to_string(server().port()) + path);
    if (!error.empty()) {
      ADD_FAILURE() << error << ": " << path;
      return nullptr;
    }
    return browser;
  }

  static int runs_;
};
int ChatPage::runs_ = 0;

TEST_F(ChatPage, IsOneSelfContainedHtmlPageAndOnlyGetIsAllowed) {
  ASSERT_NE(server().port(), 0);
  httplib::Client client = server().client();
  const httplib::Result page = client.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(page->body.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page->body.find("/v1/chat/completions"), std::string::npos);
  // No outside assets: no external scripts, styles, images or fonts.
  for (const char* outside : {"src=", "<link", "url(", "http://", "https://", "import "})
    EXPECT_EQ(page->body.find(outside), std::string::npos) << outside;
  const httplib::Result post = client.Post("/", "{}", "application/json");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  EXPECT_EQ(post->get_header_value("Allow"), "GET, HEAD");
  EXPECT_NE(post->body.find("method_not_allowed"), std::string::npos) << post->body;
}

// The page's answer, streamed and shown, is the server's greedy answer: with a system prompt,
// max_tokens and temperature from the query, and again cut at a stop string.
TEST_F(ChatPage, ShowsTheStreamedAnswerInAHeadlessBrowser) {
  const std::string chromium = zt::testing::find_chromium();
  if (chromium.empty()) GTEST_SKIP() << kNoChromium;
  ASSERT_NE(server().port(), 0);
  const std::string system = "You answer in short <lines> & plain words.";
  const std::string message = "What is 2+2?";
  json body = {{"messages", {{{"role", "system"}, {"content", system}}, {{"role", "user"}, {"content", message}}}},
               {"temperature", 0},
               {"max_tokens", 40}};
  httplib::Client client = server().client();
  const std::string whole = post(client, "/v1/chat/completions", body)["choices"][0]["message"]["content"];
  ASSERT_FALSE(whole.empty()) << "the tiny model answered nothing: pick another message";
  const std::string query =
      "system=" + url_encoded(system) + "&temperature=0&max_tokens=40&message=" + url_encoded(message);
  const json shown = answer_shown(chromium, query);
  EXPECT_EQ(shown["state"], "done") << shown["text"];
  EXPECT_EQ(shown["text"], whole);

  // A stop string typed into the page (one a line) reaches the request.
  std::size_t at = whole.size() / 2;
  while (at < whole.size() && !std::isalnum(static_cast<unsigned char>(whole[at]))) ++at;
  ASSERT_LT(at, whole.size()) << "no letter in the second half of: " << whole;
  const std::string stop = whole.substr(at, 1);
  body["stop"] = {stop};
  const std::string stopped = post(client, "/v1/chat/completions", body)["choices"][0]["message"]["content"];
  ASSERT_LT(stopped.size(), whole.size());
  const json shown_stopped = answer_shown(chromium, query + "&stop=" + url_encoded(stop));
  EXPECT_EQ(shown_stopped["state"], "done") << shown_stopped["text"];
  EXPECT_EQ(shown_stopped["text"], stopped);
}

// Stop aborts the stream: the page keeps what came (the start of the greedy answer) and says
// it stopped, and the server drops the request, logging that its client went away.
TEST_F(ChatPage, StopAbortsTheStream) {
  const std::string chromium = zt::testing::find_chromium();
  if (chromium.empty()) GTEST_SKIP() << kNoChromium;
  ASSERT_NE(server().port(), 0);
  const std::string message = "What is 2+2?";
  constexpr int kLongAnswer = 180;  // as long as the tiny model's context allows, so Stop comes first
  httplib::Client client = server().client();
  const std::string whole = post(client, "/v1/chat/completions",
                                 {{"messages", {{{"role", "user"}, {"content", message}}}},
                                  {"temperature", 0},
                                  {"max_tokens", kLongAnswer}})["choices"][0]["message"]["content"];
  // The tiny model can finish all its tokens between two looks at the page on a fast machine,
  // or before the aborted request reaches the server (which then logs it done); such an attempt
  // proves nothing about Stop, so the test tries again.
  json shown = json::object();
  bool cancelled = false;
  for (int attempt = 0; attempt < 6 && !cancelled; ++attempt) {
    shown = answer_shown(chromium,
                         "temperature=0&max_tokens=" + std::to_string(kLongAnswer) + "&message=" + url_encoded(message),
                         /*press_stop=*/true);
    if (shown.value("state", "") != "stopped") continue;
    for (int tries = 0; tries < 30 && !cancelled; ++tries) {
      cancelled = server().log().find("cancelled (the client went away)") != std::string::npos;
      if (!cancelled) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  ASSERT_EQ(shown["state"], "stopped") << "every answer ended before Stop could be pressed: " << shown["text"];
  const std::string text = shown["text"];
  EXPECT_FALSE(text.empty());
  EXPECT_LT(text.size(), whole.size());
  EXPECT_EQ(whole.rfind(text, 0), 0u) << "not the start of the answer: " << text;
  EXPECT_TRUE(cancelled) << server().log();
}

// The thinking setting reaches the request as chat_template_kwargs.enable_thinking: on a qwen3
// server the page's answer with thinking off is the greedy answer to that request.
TEST_F(ChatPage, SendsTheThinkingSetting) {
  const std::string chromium = zt::testing::find_chromium();
  if (chromium.empty()) GTEST_SKIP() << kNoChromium;
  fs::create_directories(suite_folder() / "qwen3");
  ServerProcess qwen3(suite_folder() / "qwen3", {"--template", "qwen3"});
  ASSERT_NE(qwen3.port(), 0);
  const std::string message = "What is 2+2?";
  json body = {{"messages", {{{"role", "user"}, {"content", message}}}}, {"temperature", 0}, {"max_tokens", 24}};
  httplib::Client client = qwen3.client();
  body["chat_template_kwargs"] = {{"enable_thinking", false}};
  const std::string off = post(client, "/v1/chat/completions", body)["choices"][0]["message"]["content"];
  body["chat_template_kwargs"] = {{"enable_thinking", true}};
  const std::string on = post(client, "/v1/chat/completions", body)["choices"][0]["message"]["content"];
  ASSERT_NE(off, on) << "pick a message whose answers differ, or this test shows nothing";
  const json shown =
      answer_shown(chromium, "temperature=0&max_tokens=24&enable_thinking=false&message=" + url_encoded(message),
                   /*press_stop=*/false, qwen3.port());
  EXPECT_EQ(shown["state"], "done");
  EXPECT_EQ(shown["text"], off);
}

// The page's own reading of a <think> block at the start of an answer, run in the browser.
TEST_F(ChatPage, ShowsAThinkBlockApart) {
  const std::string chromium = zt::testing::find_chromium();
  if (chromium.empty()) GTEST_SKIP() << kNoChromium;
  const auto opened = open_page(chromium, "think", "/");
  ASSERT_TRUE(opened);
  zt::testing::HeadlessChromium& browser = *opened;
  auto split = [&](const std::string& text) {
    json result;
    for (int tries = 0; tries < 100 && !result.is_object(); ++tries) {  // until the page's script has run
      result =
          browser.evaluate("typeof splitThinking === 'function' ? splitThinking(" + json(text).dump() + ") : null");
      if (!result.is_object()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return result;
  };
  EXPECT_EQ(split("<think>\nr1\n</think>\n\nThe answer."), (json{{"reasoning", "r1"}, {"answer", "The answer."}}));
  EXPECT_EQ(split("<think>\nstill thinking"), (json{{"reasoning", "still thinking"}, {"answer", ""}}));
  EXPECT_EQ(split("No thought <think>here</think>"),
            (json{{"reasoning", ""}, {"answer", "No thought <think>here</think>"}}));
}

// A second message typed into the page is sent with the conversation so far: its answer is the
// greedy answer to both turns.
TEST_F(ChatPage, KeepsTheConversation) {
  const std::string chromium = zt::testing::find_chromium();
  if (chromium.empty()) GTEST_SKIP() << kNoChromium;
  const auto opened =
      open_page(chromium, "turns", "/?temperature=0&max_tokens=12&message=" + url_encoded("What is 2+2?"));
  ASSERT_TRUE(opened);
  zt::testing::HeadlessChromium& browser = *opened;
  auto answered = [&](std::size_t answers) {  // the last answer, once `answers` have ended
    for (int tries = 0; tries < 600; ++tries) {
      const json count = browser.evaluate("document.querySelectorAll('.message.assistant').length");
      const json shown = browser.evaluate(kLastAnswer);
      if (count == answers && shown.is_object() && shown["state"] != "streaming") return shown;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return json{{"state", "never"}, {"text", ""}};
  };
  const json first = answered(1);
  ASSERT_EQ(first["state"], "done");
  browser.evaluate(
      "document.getElementById('message').value = 'And 3+3?'; "
      "document.getElementById('composer').requestSubmit(); true");
  const json second = answered(2);
  ASSERT_EQ(second["state"], "done");
  const json body = {{"messages",
                      {{{"role", "user"}, {"content", "What is 2+2?"}},
                       {{"role", "assistant"}, {"content", first["text"]}},
                       {{"role", "user"}, {"content", "And 3+3?"}}}},
                     {"temperature", 0},
                     {"max_tokens", 12}};
  httplib::Client client = server().client();
  const std::string with_history = post(client, "/v1/chat/completions", body)["choices"][0]["message"]["content"];
  const json alone = {
      {"messages", {{{"role", "user"}, {"content", "And 3+3?"}}}}, {"temperature", 0}, {"max_tokens", 12}};
  ASSERT_NE(post(client, "/v1/chat/completions", alone)["choices"][0]["message"]["content"], with_history)
      << "pick messages whose answers differ with and without the first turn, or this test shows nothing";
  EXPECT_EQ(second["text"], with_history);
}

}  // namespace
