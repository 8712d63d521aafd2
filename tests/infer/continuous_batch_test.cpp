// The batch open to requests at any time (what `zerotune serve` runs on): requests that join
// while others decode (prefilled in the decoding step's forward), and requests cancelled
// mid-answer, leave every other request's tokens exactly what it gets alone, and a cancelled
// one frees its place and cache at once.
#include <gtest/gtest.h>

#include <map>

#include "infer/continuous_batch.h"
#include "models/config/config_presets.h"
#include "models/init.h"
#include "models/reference/generate.h"
#include "tests/common/op_test_util.h"

namespace zt::infer {
namespace {

using Tokens = std::vector<std::int64_t>;

models::CausalLM tiny_qwen() {
  return models::init_model(models::parse_config(models::tiny_config_json(models::Architecture::kQwen2), "tiny"), 5,
                            {.dtype = DType::kF64});
}

GenerationRequest request(Tokens prompt, std::int64_t max_new_tokens, bool sample, std::uint64_t seed) {
  models::GenerationOptions options;
  options.max_new_tokens = max_new_tokens;
  options.do_sample = sample;
  options.seed = seed;
  return {std::move(prompt), options};
}

struct Recorder {
  std::map<std::size_t, Tokens> streamed, finished;
  BatchEvents events() {
    return {.token = [this](std::size_t r, std::int64_t t) { streamed[r].push_back(t); },
            .finished = [this](std::size_t r, Tokens generated) { finished[r] = std::move(generated); }};
  }
};

TEST(ContinuousBatch, EachStepCountsThePromptTokensItPrefilledAndTheSequencesItAdvanced) {
  const models::CausalLM model = tiny_qwen();
  Recorder recorder;
  ContinuousBatch batch(model, {.max_batch = 2, .block_size = 4}, 64, 16, recorder.events());
  batch.add(0, request({3, 4, 5}, 4, false, 0));
  const ContinuousBatch::StepCounts first = batch.step();
  EXPECT_EQ(first.prompt_tokens, 3);
  EXPECT_EQ(first.sequences, 1);
  batch.add(1, request({7, 8}, 4, false, 0));
  batch.add(2, request({9}, 4, false, 0));  // waits: max_batch is 2
  EXPECT_EQ(batch.waiting(), 2u);
  const ContinuousBatch::StepCounts joined = batch.step();
  EXPECT_EQ(joined.prompt_tokens, 2);  // request 1's prompt, prefilled beside request 0's decode
  EXPECT_EQ(joined.sequences, 2);
  EXPECT_EQ(batch.waiting(), 1u);
  EXPECT_EQ(batch.running(), 2u);
  const ContinuousBatch::StepCounts decode = batch.step();
  EXPECT_EQ(decode.prompt_tokens, 0);
  EXPECT_EQ(decode.sequences, 2);
}

TEST(ContinuousBatch, RequestsJoiningMidRunGetTheirTokensAlone) {
  const models::CausalLM model = tiny_qwen();
  const std::vector<GenerationRequest> requests{request({3, 4, 5}, 9, false, 0), request({7}, 6, true, 11),
                                                request({9, 1, 8, 2}, 8, true, 12), request({5, 5}, 3, false, 0)};
  Recorder recorder;
  ContinuousBatch batch(model, {.max_batch = 3, .block_size = 4}, 64, 16, recorder.events());
  batch.add(0, requests[0]);
  batch.step();
  batch.step();
  batch.add(1, requests[1]);  // joins while request 0 decodes
  batch.step();
  batch.add(2, requests[2]);
  batch.add(3, requests[3]);  // waits for a place: max_batch is 3
  while (!batch.idle()) batch.step();
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const Tokens alone = models::generate(model, requests[i].prompt, requests[i].options);
    EXPECT_EQ(recorder.finished[i], alone) << "request " << i;
    EXPECT_EQ(recorder.streamed[i], alone) << "request " << i;
  }
}

// A step in which prompts are admitted is one forward: every running sequence gets one token
// and every admitted prompt its first, packed together (the cache refuses a prefill of a
// sequence with tokens cached, so the running ones ran as decode rows), and the tokens are
// still each request's own.
TEST(ContinuousBatch, AdmittedPromptsPrefillInTheDecodingStep) {
  const models::CausalLM model = tiny_qwen();
  const std::vector<GenerationRequest> requests{request({3, 4, 5}, 6, false, 0), request({9, 1, 8, 2}, 5, true, 3),
                                                request({7, 7}, 4, false, 0)};
  Recorder recorder;
  ContinuousBatch batch(model, {.max_batch = 3, .block_size = 4}, 64, 16, recorder.events());
  batch.add(0, requests[0]);
  batch.step();
  EXPECT_EQ(recorder.streamed[0].size(), 1u) << "a prefill alone";
  batch.add(1, requests[1]);
  batch.add(2, requests[2]);
  batch.step();
  EXPECT_EQ(recorder.streamed[0].size(), 2u) << "request 0 decoded once";
  EXPECT_EQ(recorder.streamed[1].size(), 1u) << "request 1 prefilled in the same step, not decoded too";
  EXPECT_EQ(recorder.streamed[2].size(), 1u);
  EXPECT_EQ(batch.running(), 3u);
  while (!batch.idle()) batch.step();
  for (std::size_t i = 0; i < requests.size(); ++i)
    EXPECT_EQ(recorder.finished[i], models::generate(model, requests[i].prompt, requests[i].options)) << i;
}

TEST(ContinuousBatch, CancelledRequestLeavesAtOnceAndFreesItsPlace) {
  const models::CausalLM model = tiny_qwen();
  Recorder recorder;
  // One place: the second request runs only once the first has left.
  ContinuousBatch batch(model, {.max_batch = 1, .block_size = 4}, 8, 30, recorder.events());
  const GenerationRequest long_one = request({3, 4, 5}, 25, false, 0), short_one = request({6}, 4, false, 0);
  batch.add(0, long_one);
  batch.add(1, short_one);
  batch.step();
  batch.step();
  batch.cancel(0);
  ASSERT_EQ(recorder.finished.count(0), 1u) << "a cancelled request reports its end at once";
  EXPECT_EQ(recorder.finished[0].size(), 2u);  // the first step's prefill, the second's decode
  EXPECT_EQ(batch.running(), 0u);
  batch.cancel(0);  // already gone: nothing happens
  while (!batch.idle()) batch.step();
  EXPECT_EQ(recorder.finished[1], models::generate(model, short_one.prompt, short_one.options));

  batch.add(2, long_one);
  batch.add(3, short_one);
  batch.cancel(3);  // still waiting
  EXPECT_EQ(recorder.finished[3], Tokens{});
  while (!batch.idle()) batch.step();
  EXPECT_EQ(recorder.finished[2], models::generate(model, long_one.prompt, long_one.options));
}

TEST(ContinuousBatch, RequestsThatCannotRunAreRefusedAndNothingIsAdded) {
  const models::CausalLM model = tiny_qwen();
  Recorder recorder;
  ContinuousBatch batch(model, {.block_size = 4}, 16, 10, recorder.events());
  testing::expect_mentions(testing::error_of([&] { batch.add(0, request({1, 2, 3}, 8, false, 0)); }), {"11", "10"});
  testing::expect_mentions(testing::error_of([&] { batch.add(1, request({}, 2, false, 0)); }), {"no tokens"});
  EXPECT_TRUE(batch.idle());
}

}  // namespace
}  // namespace zt::infer
