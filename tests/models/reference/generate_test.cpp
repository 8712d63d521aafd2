// Generation: transformers' logits processors on hand-computed rows, seeded sampling, eos
// stops, and generation_config.json.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "models/config/config_presets.h"
#include "models/generation/generate_sampling.h"
#include "models/init.h"
#include "models/reference/generate.h"
#include "tests/common/op_test_util.h"
#include "tests/common/safetensors_test_util.h"

namespace zt::models {
namespace {

using testing::error_of;
using testing::expect_mentions;

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<double> log_probs(const std::vector<double>& p) {
  std::vector<double> logits;
  for (double v : p) logits.push_back(std::log(v));
  return logits;
}

TEST(GenerateSampling, RepetitionPenaltyDividesPositivesAndMultipliesNegatives) {
  std::vector<double> logits{2.0, -2.0, 1.0};
  apply_repetition_penalty(logits, {0, 1, 1}, 2.0);  // id 1 twice: penalised once
  EXPECT_EQ(logits, (std::vector<double>{1.0, -4.0, 1.0}));
}

TEST(GenerateSampling, TopKKeepsTiesWithTheKth) {
  std::vector<double> logits{1.0, 3.0, 2.0, 3.0, 0.5};
  apply_top_k(logits, 2);
  EXPECT_EQ(logits, (std::vector<double>{-kInf, 3.0, -kInf, 3.0, -kInf}));
  std::vector<double> all{1.0, 2.0};
  apply_top_k(all, 0);
  EXPECT_EQ(all, (std::vector<double>{1.0, 2.0}));
}

TEST(GenerateSampling, TopPKeepsTheSmallestSetReachingP) {
  // Probabilities 0.5, 0.3, 0.15, 0.05: ascending cumulative 0.05, 0.2, 0.5, 1.
  std::vector<double> logits = log_probs({0.5, 0.3, 0.15, 0.05});
  apply_top_p(logits, 0.75);  // drops those within 0.25: 0.05 and 0.15
  EXPECT_TRUE(std::isfinite(logits[0]) && std::isfinite(logits[1]));
  EXPECT_EQ(logits[2], -kInf);
  EXPECT_EQ(logits[3], -kInf);
  logits = log_probs({0.5, 0.3, 0.15, 0.05});
  apply_top_p(logits, 0.85);  // drops only 0.05
  EXPECT_TRUE(std::isfinite(logits[2]));
  EXPECT_EQ(logits[3], -kInf);
  logits = log_probs({0.5, 0.3, 0.15, 0.05});
  apply_top_p(logits, 0.01);  // never the most likely token
  EXPECT_TRUE(std::isfinite(logits[0]));
  EXPECT_EQ(logits[1], -kInf);
}

TEST(GenerateSampling, SamplingWalksTheCumulativeDistribution) {
  GenerationOptions options;
  options.do_sample = true;
  options.top_k = 0;
  std::vector<double> logits = log_probs({0.5, 0.3, 0.15, 0.05});
  EXPECT_EQ(choose_token(logits, {}, options, 0.1), 0);
  EXPECT_EQ(choose_token(logits, {}, options, 0.6), 1);
  EXPECT_EQ(choose_token(logits, {}, options, 0.9), 2);
  EXPECT_EQ(choose_token(logits, {}, options, 0.99), 3);
  // Temperature 2 takes square roots of the probabilities: 0.5^.5 / 1.8657... = 0.3790...
  options.temperature = 2.0;
  EXPECT_EQ(choose_token(logits, {}, options, 0.375), 0);
  EXPECT_EQ(choose_token(logits, {}, options, 0.385), 1);
  // Greedy ignores the draw, not the repetition penalty.
  GenerationOptions greedy;
  EXPECT_EQ(choose_token(logits, {}, greedy, 0.99), 0);
  greedy.repetition_penalty = 10.0;
  EXPECT_EQ(choose_token({1.0, 0.5}, {0}, greedy, 0.0), 1);
}

CausalLM tiny_model() {
  return init_model(parse_config(tiny_config_json(Architecture::kGlm), "tiny"), 3, {.dtype = DType::kF64});
}

TEST(Generate, SeededSamplingRepeatsAndSeedsDiffer) {
  CausalLM model = tiny_model();
  GenerationOptions options;
  options.do_sample = true;
  options.max_new_tokens = 10;
  options.eos_token_ids.clear();
  std::vector<std::int64_t> first = generate(model, {3, 4, 5}, options);
  EXPECT_EQ(first.size(), 10u);
  EXPECT_EQ(generate(model, {3, 4, 5}, options), first);
  bool any_differs = false;
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    options.seed = seed;
    any_differs = any_differs || generate(model, {3, 4, 5}, options) != first;
  }
  EXPECT_TRUE(any_differs);  // near-uniform logits: 4 seeds giving the same 10 tokens is ~impossible
}

TEST(Generate, StopsAfterAnEosToken) {
  CausalLM model = tiny_model();
  GenerationOptions options;
  options.max_new_tokens = 5;
  options.eos_token_ids.clear();
  std::vector<std::int64_t> free_run = generate(model, {7, 8}, options);
  ASSERT_EQ(free_run.size(), 5u);
  options.eos_token_ids = {99, free_run[1]};
  std::vector<std::int64_t> stopped = generate(model, {7, 8}, options);
  EXPECT_EQ(stopped, (std::vector<std::int64_t>(free_run.begin(), free_run.begin() + 2)));
  options.max_new_tokens = 0;
  EXPECT_TRUE(generate(model, {7, 8}, options).empty());
}

TEST(Generate, BadRequestsAreRefused) {
  CausalLM model = tiny_model();
  GenerationOptions options;
  expect_mentions(error_of([&] { generate(model, {}, options); }), {"prompt"});
  options.do_sample = true;
  options.temperature = 0.0;
  expect_mentions(error_of([&] { generate(model, {1}, options); }), {"temperature", "greedy"});
  options.temperature = 1.0;
  options.top_p = 0.0;
  expect_mentions(error_of([&] { generate(model, {1}, options); }), {"top_p"});
  options.top_p = 1.0;
  options.repetition_penalty = -1.0;
  expect_mentions(error_of([&] { generate(model, {1}, options); }), {"repetition_penalty"});
}

TEST(GenerationConfig, ReadFromTheModelFolder) {
  testing::ScratchDir dir;
  ModelConfig config = parse_config(tiny_config_json(Architecture::kQwen2), "tiny");
  GenerationOptions defaults = load_generation_options(dir.str(), config);
  EXPECT_EQ(defaults.eos_token_ids, std::vector<std::int64_t>{2});
  EXPECT_FALSE(defaults.do_sample);
  EXPECT_EQ(defaults.top_k, 50);
  // Qwen2.5-Instruct's generation_config.json.
  testing::write_bytes(dir.file("generation_config.json"),
                       R"({"bos_token_id": 151643, "do_sample": true, "eos_token_id": [151645, 151643],
                           "pad_token_id": 151643, "repetition_penalty": 1.05, "temperature": 0.7,
                           "top_p": 0.8, "top_k": 20, "transformers_version": "4.37.0"})");
  GenerationOptions qwen = load_generation_options(dir.str(), config);
  EXPECT_TRUE(qwen.do_sample);
  EXPECT_EQ(qwen.eos_token_ids, (std::vector<std::int64_t>{151645, 151643}));
  EXPECT_DOUBLE_EQ(qwen.repetition_penalty, 1.05);
  EXPECT_DOUBLE_EQ(qwen.temperature, 0.7);
  EXPECT_DOUBLE_EQ(qwen.top_p, 0.8);
  EXPECT_EQ(qwen.top_k, 20);
  // Neither file says how long an answer may be: not transformers' 20 tokens, but
  // kDefaultMaxNewTokens, fitted to each prompt later (fit_answer_length).
  EXPECT_FALSE(qwen.max_new_tokens_set);
  EXPECT_EQ(qwen.max_new_tokens, kDefaultMaxNewTokens);
  EXPECT_EQ(defaults.max_new_tokens, kDefaultMaxNewTokens);
  EXPECT_EQ(qwen.max_length, 0);
  // GLM-4-9B-Chat's file sets max_length (prompt and answer together), another max_new_tokens.
  testing::write_bytes(dir.file("generation_config.json"), R"({"max_length": 128000, "top_p": 0.8})");
  EXPECT_EQ(load_generation_options(dir.str(), config).max_length, 128000);
  testing::write_bytes(dir.file("generation_config.json"), R"({"max_new_tokens": 512})");
  const GenerationOptions limited = load_generation_options(dir.str(), config);
  EXPECT_TRUE(limited.max_new_tokens_set);
  EXPECT_EQ(limited.max_new_tokens, 512);
  testing::write_bytes(dir.file("generation_config.json"), R"({"max_length": -3})");
  expect_mentions(error_of([&] { load_generation_options(dir.str(), config); }),
                  {"generation_config.json", "max_length", "-3"});
  testing::write_bytes(dir.file("generation_config.json"), R"({"top_k": "twenty"})");
  expect_mentions(error_of([&] { load_generation_options(dir.str(), config); }),
                  {"generation_config.json", "top_k", "integer"});
  testing::write_bytes(dir.file("generation_config.json"), R"({"do_sample": true, "top_p": 1.5})");
  expect_mentions(error_of([&] { load_generation_options(dir.str(), config); }),
                  {"generation_config.json", "top_p", "1.5"});
}

// An answer's length when nothing set one: the default, cut by generation_config.json's
// max_length (which counts the prompt) and by the context the prompt leaves; a max_new_tokens
// that was set is kept, for the engine to refuse with the numbers when it does not fit.
TEST(GenerationConfig, AnAnswerGetsTheDefaultLengthUnlessMaxLengthOrTheContextLeavesLess) {
  GenerationOptions options;
  options.max_new_tokens = kDefaultMaxNewTokens;
  options.min_new_tokens = 100;
  FittedAnswer fitted = fit_answer_length(options, 30, 100000);
  EXPECT_EQ(fitted.options.max_new_tokens, kDefaultMaxNewTokens);
  EXPECT_EQ(fitted.limit, AnswerLimit::kDefault);
  fitted = fit_answer_length(options, 30, 226);
  EXPECT_EQ(fitted.options.max_new_tokens, 226);
  EXPECT_EQ(fitted.limit, AnswerLimit::kContext);
  EXPECT_EQ(fitted.options.min_new_tokens, 100);
  fitted = fit_answer_length(options, 30, 40);
  EXPECT_EQ(fitted.options.min_new_tokens, 40) << "min_new_tokens cannot exceed what is left";
  fitted = fit_answer_length(options, 300, -44);
  EXPECT_EQ(fitted.options.max_new_tokens, 0) << "a prompt past the context is refused where it runs";
  options.max_length = 64;
  fitted = fit_answer_length(options, 30, 226);
  EXPECT_EQ(fitted.options.max_new_tokens, 34);
  EXPECT_EQ(fitted.limit, AnswerLimit::kMaxLength);
  options.max_new_tokens = 5000;
  options.max_new_tokens_set = true;
  fitted = fit_answer_length(options, 30, 226);
  EXPECT_EQ(fitted.options.max_new_tokens, 5000);
  EXPECT_EQ(fitted.limit, AnswerLimit::kSet);
}

}  // namespace
}  // namespace zt::models
