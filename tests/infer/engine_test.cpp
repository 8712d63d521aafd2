// The inference engine: transformers' greedy tokens on every architecture (with a LoRA
// adapter and a P-Tuning prefix too; tests/data/models/generate_reference.json, written by
// scripts/make_generate_reference.py), batched results equal to one-by-one models::generate
// whatever the batch size and block size, streaming order, cancellation and bad requests.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "infer/engine.h"
#include "models/config/config_presets.h"
#include "models/init.h"
#include "models/peft/lora_files.h"
#include "models/peft/prefix_encoder_files.h"
#include "models/reference/generate.h"
#include "models/weights/weights.h"
#include "tests/common/model_fixture_util.h"
#include "tests/common/op_test_util.h"

namespace zt::infer {
namespace {

using models::CausalLM;
using models::GenerationOptions;
using Tokens = std::vector<std::int64_t>;

nlohmann::ordered_json reference() {
  static const nlohmann::ordered_json json = models::read_json_file(testing::fixture_dir("generate_reference.json"));
  return json;
}

CausalLM fixture_model(const std::string& name) {
  const std::string base = name == "qwen2_lora" || name == "qwen2_ptuning" ? "qwen2" : name;
  CausalLM model = models::load_model(testing::fixture_dir(base), {Device::cpu(), DType::kF32});
  if (name == "qwen2_lora") models::load_lora_adapter(model, testing::fixture_dir(name));
  if (name == "qwen2_ptuning") {
    models::PrefixConfig config = models::read_prefix_config(testing::fixture_dir(name));
    config.dropout = 0.0;
    auto encoder = std::make_shared<models::PrefixEncoder>(model.config(), config, model.device(), model.dtype());
    models::load_prefix_weights(encoder->named_parameters(), testing::fixture_dir(name));
    models::attach_prefix_encoder(model, encoder);
  }
  return model;
}

GenerationOptions greedy(std::int64_t max_new_tokens, Tokens eos = {}) {
  GenerationOptions options;
  options.max_new_tokens = max_new_tokens;
  options.eos_token_ids = std::move(eos);
  return options;
}

class TransformersGreedy : public ::testing::TestWithParam<std::string> {};

TEST_P(TransformersGreedy, SameTokensBatchedAndAlone) {
  const nlohmann::ordered_json cases = reference()[GetParam()];
  CausalLM model = fixture_model(GetParam());
  Tokens eos;
  for (const auto& id : cases["eos_token_id"]) eos.push_back(id.get<std::int64_t>());
  std::vector<GenerationRequest> requests;
  for (const auto& prompt : cases["prompts"])
    requests.push_back({prompt.get<Tokens>(), greedy(reference()["max_new_tokens"].get<std::int64_t>(), eos)});
  const std::vector<Tokens> batched = Engine(model, {.block_size = 8}).run(requests);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const Tokens expected = cases["new_tokens"][i].get<Tokens>();
    EXPECT_EQ(batched[i], expected) << GetParam() << " prompt " << i << " in a batch";
    EXPECT_EQ(Engine(model, {.max_batch = 1}).run({requests[i]})[0], expected) << GetParam() << " prompt " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryArchitecture, TransformersGreedy,
                         ::testing::Values("qwen2", "qwen3", "glm", "glm4", "chatglm", "qwen2_lora", "qwen2_ptuning"));

CausalLM tiny(models::Architecture arch) {
  return models::init_model(models::parse_config(models::tiny_config_json(arch), "tiny"), 5, {.dtype = DType::kF64});
}

// Prompts of awkward lengths, each with its own settings: greedy, sampled, penalised.
std::vector<GenerationRequest> mixed_requests() {
  std::vector<GenerationRequest> requests;
  const std::vector<Tokens> prompts{{3, 4, 5}, {7}, {9, 1, 8, 2, 6, 4, 4, 11, 30, 31, 12}, {5, 5, 5, 5, 5}, {20, 21}};
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    GenerationOptions options = greedy(4 + 3 * static_cast<std::int64_t>(i));
    options.do_sample = i % 2 == 1;
    options.seed = 10 + i;
    options.repetition_penalty = i == 2 ? 1.3 : 1.0;
    options.min_new_tokens = i == 4 ? 3 : 0;
    requests.push_back({prompts[i], options});
  }
  return requests;
}

TEST(Engine, BatchedResultsEqualOneByOneGeneration) {
  for (models::Architecture arch : {models::Architecture::kQwen3, models::Architecture::kChatGlm}) {
    CausalLM model = tiny(arch);
    const std::vector<GenerationRequest> requests = mixed_requests();
    std::vector<Tokens> alone;
    for (const GenerationRequest& r : requests) alone.push_back(models::generate(model, r.prompt, r.options));
    for (EngineOptions options : {EngineOptions{.max_batch = 2, .block_size = 4}, EngineOptions{.block_size = 3},
                                  EngineOptions{.max_batch = 3, .block_size = 16, .max_prefill_tokens = 4}})
      EXPECT_EQ(Engine(model, options).run(requests), alone)
          << "max_batch " << options.max_batch << ", block_size " << options.block_size;
  }
}

TEST(Engine, StopsAtEosAndKeepsTheCacheOfTheOthers) {
  CausalLM model = tiny(models::Architecture::kQwen2);
  std::vector<GenerationRequest> requests = mixed_requests();
  requests[1].options.max_new_tokens = 12;
  const Tokens free_run = models::generate(model, requests[1].prompt, requests[1].options);
  // The first token not seen before it becomes the eos id: the run must end right there.
  std::size_t stop = 1;
  while (stop < free_run.size() && std::count(free_run.begin(), free_run.begin() + stop, free_run[stop]) > 0) ++stop;
  ASSERT_LT(stop, free_run.size()) << "the sampled run repeats one token; pick another seed";
  requests[1].options.eos_token_ids = {free_run[stop]};
  const std::vector<Tokens> results = Engine(model, {.max_batch = 2, .block_size = 2}).run(requests);
  EXPECT_EQ(results[1], Tokens(free_run.begin(), free_run.begin() + static_cast<std::ptrdiff_t>(stop) + 1));
  for (std::size_t i : {0, 2, 3, 4})
    EXPECT_EQ(results[i], models::generate(model, requests[i].prompt, requests[i].options)) << "request " << i;
}

TEST(Engine, TokensStreamInOrderAndCancellingEndsEveryRequest) {
  CausalLM model = tiny(models::Architecture::kGlm4);
  const std::vector<GenerationRequest> requests = mixed_requests();
  std::vector<Tokens> streamed(requests.size());
  const std::vector<Tokens> results =
      Engine(model, {.max_batch = 2}).run(requests, [&](std::size_t r, std::int64_t t) { streamed[r].push_back(t); });
  EXPECT_EQ(streamed, results);

  int tokens = 0;
  const std::vector<Tokens> cut = Engine(model).run(
      requests, [&](std::size_t, std::int64_t) { ++tokens; }, [&] { return tokens >= 7; });
  std::size_t total = 0;
  for (std::size_t i = 0; i < cut.size(); ++i) {
    total += cut[i].size();
    EXPECT_EQ(cut[i], Tokens(results[i].begin(), results[i].begin() + static_cast<std::ptrdiff_t>(cut[i].size())));
  }
  EXPECT_EQ(total, 10u);  // the first step chose one token for each of the 5, the second 5 more
}

TEST(Engine, BadRequestsAreRefusedBeforeAnyWork) {
  nlohmann::ordered_json json = models::tiny_config_json(models::Architecture::kQwen2);
  json["max_position_embeddings"] = 40;
  CausalLM model = models::init_model(models::parse_config(json, "tiny"), 5, {.dtype = DType::kF64});
  const std::int64_t context = models::context_length(model.config());
  ASSERT_EQ(context, 40);
  const std::string context_text = std::to_string(context);
  testing::expect_mentions(testing::error_of([&] {
                             Engine(model).run({{Tokens(context, 3), greedy(1)}});
                           }),
                           {"prompt 1", "context", context_text.c_str(), "max_new_tokens"});
  testing::expect_mentions(testing::error_of([&] {
                             Engine(model).run({{{1}, greedy(1)}, {{}, greedy(1)}});
                           }),
                           {"prompt 2", "no tokens"});
  GenerationOptions bad = greedy(3);
  bad.min_new_tokens = 5;
  testing::expect_mentions(testing::error_of([&] { Engine(model).run({{{1}, bad}}); }), {"min_new_tokens"});
  testing::expect_mentions(testing::error_of([&] { Engine(model, {.max_batch = 0}); }), {"max_batch"});
}

TEST(Engine, NoNewTokensAskedGivesEmptyResults) {
  CausalLM model = tiny(models::Architecture::kQwen2);
  EXPECT_EQ(Engine(model).run({{{1, 2}, greedy(0)}, {{3}, greedy(2)}})[0], Tokens{});
}

}  // namespace
}  // namespace zt::infer
