// zerotune serve when an answer goes wrong, as a user runs it on the tiny model (CPU):
// - a model whose embedding is padded past its tokenizer (as Qwen2.5's 151936 rows for 151669
//   tokens) generates an id the tokenizer has no token for: the id gives no text, counts as a
//   generated token, and `generate` and `serve` answer as usual; a prompt of such ids is a 400;
// - a generation step that fails (ZT_SERVE_FAIL_STEPS makes one fail as a device error would)
//   fails the requests it ran for, a whole answer as a 500 and a stream as an error event and
//   [DONE], and the server answers the next request as if nothing had happened.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "tensor/safetensors/safetensors.h"
#include "tests/serve/serve_test_util.h"

namespace {

using namespace zt::testing::serve;

constexpr std::int64_t kPaddedVocab = 600;            // the tiny tokenizer has 503 tokens
constexpr std::int64_t kPulled = 550, kPushed = 551;  // embedding rows K*v and -K*v

// The tiny model with its (tied) embedding padded to kPaddedVocab rows and config.json saying
// so. Rows kPulled and kPushed are a large vector and its opposite: whatever the last hidden
// state h, one of them has a logit of K*|h.v|, far above every real token's, so a greedy
// answer's first token is one of these two ids the tokenizer does not have.
std::string padded_vocabulary_model(const fs::path& folder) {
  const fs::path model = folder / "tiny-qwen-padded";
  fs::create_directories(model);
  for (const auto& entry : fs::directory_iterator(kModel))
    if (entry.path().filename() != "model.safetensors")
      fs::copy_file(entry.path(), model / entry.path().filename(), fs::copy_options::overwrite_existing);
  json config = json::parse(zt::testing::read_text(model / "config.json"));
  config["vocab_size"] = kPaddedVocab;
  std::ofstream(model / "config.json") << config.dump(2);

  const zt::SafetensorsFile weights = zt::SafetensorsFile::open(kModel + "/model.safetensors");
  zt::NamedTensors tensors;
  for (const std::string& name : weights.names()) {
    zt::Tensor tensor = weights.get(name);
    if (name == "model.embed_tokens.weight") {
      const std::int64_t rows = tensor.shape()[0], hidden = tensor.shape()[1];
      zt::Tensor padded = zt::Tensor::zeros({kPaddedVocab, hidden}, zt::DType::kF32);
      auto* out = static_cast<float*>(padded.data_ptr());
      std::memcpy(out, tensor.contiguous().data_ptr(), tensor.nbytes());
      std::mt19937 rng(7);
      std::normal_distribution<float> normal(0.0f, 1.0f);
      for (std::int64_t i = 0; i < hidden; ++i) {
        const float value = 1000.0f * normal(rng);
        out[kPulled * hidden + i] = value;
        out[kPushed * hidden + i] = -value;
      }
      EXPECT_LT(rows, kPulled);
      tensor = padded;
    }
    tensors.emplace_back(name, tensor);
  }
  zt::save_safetensors((model / "model.safetensors").string(), tensors, {{"format", "pt"}});
  return model.string();
}

class PaddedVocabulary : public SuiteServer<PaddedVocabulary> {
 public:
  static constexpr const char* kName = "serve_failures_padded_test";
  static std::unique_ptr<ServerProcess> start_server(const fs::path& folder) {
    return std::make_unique<ServerProcess>(folder, std::vector<std::string>{}, padded_vocabulary_model(folder));
  }
  static std::string model() { return (suite_folder() / "tiny-qwen-padded").string(); }
};

TEST_F(PaddedVocabulary, AGeneratedIdWithoutATokenGivesNoTextAndTheServerGoesOn) {
  // What `generate` chooses (it decodes the same ids): the first id is one the tokenizer lacks.
  const fs::path prompts = suite_folder() / "prompts.jsonl", out = suite_folder() / "out.jsonl";
  std::ofstream(prompts) << R"("a b c")"
                         << "\n";
  const zt::testing::CliRun generated = zt::testing::run_zerotune(
      "generate --model_name_or_path " + model() + " --device cpu --max_new_tokens 6 --input_file " + prompts.string() +
          " --output_file " + out.string(),
      suite_folder());
  ASSERT_EQ(generated.exit_code, 0) << generated.output;
  const json expected = json::parse(zt::testing::read_text(out));
  ASSERT_EQ(expected["output_ids"].size(), 6u) << expected.dump();
  const std::int64_t first = expected["output_ids"][0];
  EXPECT_TRUE(first == kPulled || first == kPushed) << expected.dump();

  httplib::Client client = server().client();
  const json body = {{"prompt", "a b c"}, {"max_tokens", 6}, {"temperature", 0}, {"ignore_eos", true}};
  for (int round = 0; round < 2; ++round) {  // the server still answers after the first
    const json whole = post(client, "/v1/completions", body);
    EXPECT_EQ(whole["choices"][0]["text"], expected["output"]) << whole.dump();
    EXPECT_EQ(whole["usage"]["completion_tokens"], 6) << "the id without a token counts";
    json streamed_body = body;
    streamed_body["stream_options"] = {{"include_usage", true}};
    const Streamed streamed = stream(client, "/v1/completions", streamed_body);
    EXPECT_EQ(streamed.text, expected["output"].get<std::string>());
    EXPECT_EQ(streamed.usage["completion_tokens"], 6);
    ASSERT_FALSE(streamed.events.empty());
    EXPECT_EQ(streamed.events.back(), "[DONE]");
  }
  const httplib::Result health = client.Get("/health");
  ASSERT_TRUE(health) << server().log();
  EXPECT_EQ(health->status, 200);
}

// A prompt of ids is checked against the tokenizer and the model both: an id the model has and
// the tokenizer does not, and one past the model's vocab_size, are 400s naming the prompt.
TEST_F(PaddedVocabulary, APromptIdPastTheTokenizerOrTheModelIsA400) {
  httplib::Client client = server().client();
  json body = {{"max_tokens", 2}, {"temperature", 0}};
  for (const std::int64_t id : {kPulled, kPaddedVocab, std::int64_t{1} << 40}) {
    body["prompt"] = {1, id};
    const json error = post(client, "/v1/completions", body, 400)["error"];
    EXPECT_EQ(error["param"], "prompt") << error.dump();
    EXPECT_NE(error["message"].get<std::string>().find(std::to_string(id)), std::string::npos) << error.dump();
  }
  body["prompt"] = {1, 2};
  EXPECT_EQ(post(client, "/v1/completions", body)["usage"]["completion_tokens"], 2);
}

// The OpenAI error of a server-sent event, null when the event is not one.
json error_event(const std::string& event) {
  const json parsed = json::parse(event, nullptr, false);
  return parsed.is_object() && parsed.contains("error") ? parsed["error"] : json();
}

// One server of its own: the steps are counted over every request it runs, so the requests go
// in this order. Each request below runs one prefill step and then a decode step per token.
TEST(FailingSteps, AFailedStepFailsItsRequestsAndTheNextOnesAreServed) {
  const fs::path folder = fs::path(ZT_BINARY_DIR) / ("serve_failures_steps_" + std::to_string(getpid()));
  fs::remove_all(folder);
  fs::create_directories(folder);
  ::setenv("ZT_SERVE_FAIL_STEPS", "3,6", 1);
  ServerProcess server(folder);
  ::unsetenv("ZT_SERVE_FAIL_STEPS");
  httplib::Client client = server.client();
  const json body = {{"prompt", "a b c"}, {"max_tokens", 8}, {"temperature", 0}, {"ignore_eos", true}};

  // Steps 1-3: two tokens streamed, then the failure as an error event and the stream's end.
  json streamed_body = body;
  streamed_body["stream"] = true;
  const httplib::Result streamed = client.Post("/v1/completions", streamed_body.dump(), "application/json");
  ASSERT_TRUE(streamed) << server.log();
  EXPECT_EQ(streamed->status, 200);
  const std::vector<std::string> events = events_of(streamed->body);
  ASSERT_GE(events.size(), 2u) << streamed->body;
  EXPECT_EQ(events.back(), "[DONE]") << streamed->body;
  const json stream_error = error_event(events[events.size() - 2]);
  ASSERT_FALSE(stream_error.is_null()) << streamed->body;
  EXPECT_EQ(stream_error["type"], "server_error");
  EXPECT_NE(stream_error["message"].get<std::string>().find("step 3 failed"), std::string::npos) << streamed->body;

  // Steps 4-6: a whole answer fails as a 500 in OpenAI's shape.
  const json whole_error = post(client, "/v1/completions", body, 500)["error"];
  EXPECT_EQ(whole_error["type"], "server_error") << whole_error.dump();
  EXPECT_NE(whole_error["message"].get<std::string>().find("step 6 failed"), std::string::npos) << whole_error.dump();

  // Then the server answers as a fresh one does, whole and streamed alike.
  const json answer = post(client, "/v1/completions", body);
  EXPECT_EQ(answer["usage"]["completion_tokens"], 8) << answer.dump();
  const Streamed again = stream(client, "/v1/completions", body);
  EXPECT_EQ(again.text, answer["choices"][0]["text"].get<std::string>());
  for (const std::string& event : again.events) EXPECT_TRUE(error_event(event).is_null()) << event;
  EXPECT_NE(server.log().find("a generation step failed"), std::string::npos) << server.log();
  std::error_code ignored;
  fs::remove_all(folder, ignored);
}

}  // namespace
