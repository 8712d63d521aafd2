// Requests as widely used clients send them (openai-python, LangChain, LlamaIndex, and
// clients written for vLLM), to zerotune serve on the shipped tiny model (CPU): fields that
// change the answer are honoured, not dropped (vLLM's top_k, repetition_penalty,
// stop_token_ids); openai-python's models.retrieve is answered; a completion's prompt may be
// token ids.
#include <gtest/gtest.h>

#include <string>

#include "tests/serve/serve_test_util.h"
#include "text/tokenizer/tokenizer.h"

namespace {

using namespace zt::testing::serve;

class ClientPayloads : public SuiteServer<ClientPayloads> {
 public:
  static constexpr const char* kName = "client_payloads_test";
};

json chat_body(json extra) {
  json body = {{"model", "tiny-qwen"}, {"messages", {{{"role", "user"}, {"content", "Hello"}}}}, {"max_tokens", 12}};
  body.update(extra);
  return body;
}

std::string answer_of(const json& response) { return response["choices"][0]["message"]["content"]; }

// vLLM's top_k: with top_k 1 every draw is the most likely token, so a hot sample is the
// greedy answer, for any seed, where the same sample without top_k leaves it for some seed.
TEST_F(ClientPayloads, TopKOneMakesAHotSampleGreedy) {
  httplib::Client client = server().client();
  const std::string greedy = answer_of(post(client, "/v1/chat/completions", chat_body({{"temperature", 0}})));
  bool sampled_otherwise = false;
  for (int seed = 0; seed < 4; ++seed) {
    const json hot = chat_body({{"temperature", 2}, {"seed", seed}});
    sampled_otherwise |= answer_of(post(client, "/v1/chat/completions", hot)) != greedy;
    json top_one = hot;
    top_one["top_k"] = 1;
    EXPECT_EQ(answer_of(post(client, "/v1/chat/completions", top_one)), greedy) << "seed " << seed;
  }
  EXPECT_TRUE(sampled_otherwise) << "temperature 2 gave the greedy answer for every seed: the test shows nothing";
}

// vLLM's repetition_penalty: the tiny model's greedy answer repeats one word, which a penalty
// on the tokens already seen breaks.
TEST_F(ClientPayloads, RepetitionPenaltyChangesARepeatingAnswer) {
  httplib::Client client = server().client();
  const json greedy = chat_body({{"temperature", 0}});
  json penalised = greedy;
  penalised["repetition_penalty"] = 2.0;
  EXPECT_NE(answer_of(post(client, "/v1/chat/completions", penalised)),
            answer_of(post(client, "/v1/chat/completions", greedy)));
  penalised["repetition_penalty"] = 1.0;
  EXPECT_EQ(answer_of(post(client, "/v1/chat/completions", penalised)),
            answer_of(post(client, "/v1/chat/completions", greedy)));
}

// vLLM's stop_token_ids (its server tests send them through extra_body): the answer ends at
// the first of them, as at an eos token, ignore_eos or not, with finish_reason stop, and its
// text is left out unless include_stop_str_in_output, whole and streamed, as vLLM leaves it;
// an id outside the vocabulary is a 400 naming the field.
TEST_F(ClientPayloads, StopTokenIdsEndTheAnswerAtTheirToken) {
  httplib::Client client = server().client();
  const std::string first_text =
      answer_of(post(client, "/v1/chat/completions", chat_body({{"max_tokens", 1}, {"temperature", 0}})));
  const auto tokenizer = zt::models::load_tokenizer(kModel);
  const auto first_ids = tokenizer->encode(first_text);
  ASSERT_EQ(first_ids.size(), 1u) << "the first token's text encodes otherwise: " << first_text;
  json body = chat_body({{"temperature", 0}, {"ignore_eos", true}});
  ASSERT_EQ(post(client, "/v1/chat/completions", body)["usage"]["completion_tokens"], 12);
  body["stop_token_ids"] = {first_ids[0]};
  const json stopped = post(client, "/v1/chat/completions", body);
  EXPECT_EQ(stopped["usage"]["completion_tokens"], 1);
  EXPECT_EQ(stopped["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(answer_of(stopped), "");
  EXPECT_EQ(stream(client, "/v1/chat/completions", body).text, "");
  body["include_stop_str_in_output"] = true;
  EXPECT_EQ(answer_of(post(client, "/v1/chat/completions", body)), first_text);
  EXPECT_EQ(stream(client, "/v1/chat/completions", body).text, first_text);
  body.erase("include_stop_str_in_output");
  body["stop_token_ids"] = {tokenizer->vocab_size() + 1};
  const json refused = post(client, "/v1/chat/completions", body, 400);
  EXPECT_EQ(refused["error"]["param"], "stop_token_ids");
  EXPECT_NE(refused["error"]["message"].get<std::string>().find(std::to_string(tokenizer->vocab_size() + 1)),
            std::string::npos);
}

// openai-python's client.models.retrieve(id): GET /v1/models/{id}, the model object as the
// list has it, and OpenAI's 404 for a model not served.
TEST_F(ClientPayloads, RetrievingTheServedModelAnswersItsObject) {
  httplib::Client client = server().client();
  const httplib::Result list = client.Get("/v1/models");
  const httplib::Result one = client.Get("/v1/models/tiny-qwen");
  ASSERT_TRUE(list && one);
  EXPECT_EQ(one->status, 200) << one->body;
  EXPECT_EQ(json::parse(one->body), json::parse(list->body)["data"][0]);
  const httplib::Result other = client.Get("/v1/models/Qwen/Qwen2.5-7B-Instruct");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 404);
  const json error = json::parse(other->body)["error"];
  EXPECT_EQ(error["code"], "model_not_found") << other->body;
  EXPECT_EQ(error["param"], "model");
  EXPECT_NE(error["message"].get<std::string>().find("'Qwen/Qwen2.5-7B-Instruct'"), std::string::npos);
}

// A completion's prompt as token ids, as lm-evaluation-harness's local-completions sends it
// (a list of one list of ids): the answer to the text those ids encode; ids outside the
// vocabulary are a 400 naming the prompt.
TEST_F(ClientPayloads, APromptOfTokenIdsIsAnsweredAsItsText) {
  httplib::Client client = server().client();
  const std::string text = "Once upon a time";
  const auto tokenizer = zt::models::load_tokenizer(kModel);
  const auto encoded = tokenizer->encode(text);
  const std::vector<std::int64_t> ids(encoded.begin(), encoded.end());
  const json body = {{"model", "tiny-qwen"}, {"max_tokens", 8}, {"temperature", 0}, {"seed", 1234}, {"stop", {"\n\n"}}};
  json as_text = body, as_ids = body, as_list_of_ids = body;
  as_text["prompt"] = text;
  as_ids["prompt"] = ids;
  as_list_of_ids["prompt"] = {ids};
  const json answer = post(client, "/v1/completions", as_text);
  EXPECT_EQ(post(client, "/v1/completions", as_ids)["choices"], answer["choices"]);
  EXPECT_EQ(post(client, "/v1/completions", as_list_of_ids)["choices"], answer["choices"]);
  EXPECT_EQ(post(client, "/v1/completions", as_list_of_ids)["usage"], answer["usage"]);
  json outside = body;
  outside["prompt"] = {1, tokenizer->vocab_size()};
  EXPECT_EQ(post(client, "/v1/completions", outside, 400)["error"]["param"], "prompt");
  outside["prompt"] = {-1};
  EXPECT_EQ(post(client, "/v1/completions", outside, 400)["error"]["param"], "prompt");
}

// vLLM's skip_special_tokens: false keeps the text of the special tokens an answer holds (here
// <|endoftext|>, drawn by a hot sample with a fixed seed), which are otherwise left out.
TEST_F(ClientPayloads, SkipSpecialTokensFalseKeepsTheirText) {
  httplib::Client client = server().client();
  json body = chat_body(
      {{"max_tokens", 30}, {"temperature", 1.5}, {"seed", 3}, {"ignore_eos", true}, {"skip_special_tokens", false}});
  const std::string kept = answer_of(post(client, "/v1/chat/completions", body));
  ASSERT_NE(kept.find("<|endoftext|>"), std::string::npos) << "the sample holds no special token: " << kept;
  EXPECT_EQ(stream(client, "/v1/chat/completions", body).text, kept);
  body.erase("skip_special_tokens");
  std::string skipped = kept;
  skipped.erase(kept.find("<|endoftext|>"), std::string("<|endoftext|>").size());
  EXPECT_EQ(answer_of(post(client, "/v1/chat/completions", body)), skipped);
}

}  // namespace
