// Tensor-parallel inference on in-process CPU ranks: shards split as Megatron splits them, a
// shard's logits equal to the whole model's, the same greedy and seeded tokens on every rank
// as on one, row-parallel biases counted once, cancellation reaching every rank, sizes that
// cannot split refused by name. tests/cli/tensor_parallel_commands_test.cpp runs the CLI.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>

#include "infer/engine.h"
#include "infer/tensor_parallel_ranks.h"
#include "models/config/config_presets.h"
#include "models/init.h"
#include "models/weights/hf_names.h"
#include "tests/common/op_test_util.h"
#include "tests/common/tensor_parallel_test_util.h"

namespace zt::infer {
namespace {

using models::CausalLM;
using testing::Tokens;

const std::vector<std::string> kFixtures{"qwen2", "qwen3", "glm", "glm4", "chatglm", "qwen2_lora", "qwen2_ptuning"};

double max_relative_difference(const Tensor& actual, const Tensor& expected) {
  const std::vector<double> a = actual.to_vector(), e = expected.to_vector();
  double largest = 0.0, difference = 0.0;
  for (std::size_t i = 0; i < e.size(); ++i) {
    largest = std::max(largest, std::abs(e[i]));
    difference = std::max(difference, std::abs(a[i] - e[i]));
  }
  return difference / largest;
}

// Every rank's logits for one uncached forward of `batch`, the shards summing over `comm`.
std::vector<Tensor> shard_logits(std::vector<CausalLM>& shards, const testing::FixtureBatch& batch) {
  std::vector<Tensor> logits(shards.size());
  distributed::run_inprocess_ranks(static_cast<int>(shards.size()), std::chrono::minutes(5),
                                   [&](distributed::Communicator& comm) {
                                     CausalLM& shard = shards[static_cast<std::size_t>(comm.rank())];
                                     shard.set_partial_sum_reducer([&comm](const Tensor& t) { comm.all_reduce(t); });
                                     logits[static_cast<std::size_t>(comm.rank())] = testing::logits_of(shard, batch);
                                   });
  return logits;
}

TEST(TensorParallel, ShardsHoldTheirHeadsAndColumns) {
  const CausalLM full = testing::tp_fixture_model("qwen2");
  const std::vector<std::pair<int, std::vector<std::int64_t>>> expected{{2, {3, 1, 60}}, {6, {1, 1, 20}}};
  for (const auto& [size, sizes] : expected) {
    const models::ModelConfig config = models::shard_config(full.config(), size);
    EXPECT_EQ((std::vector<std::int64_t>{config.num_heads, config.num_kv_heads, config.intermediate_size}), sizes);
  }
  std::vector<CausalLM> shards = testing::shards_of(testing::tp_fixture_model("qwen2"), 2, Device::cpu());
  const std::string layer = "model.layers.1.";
  const Tensor q = full.parameter(layer + "self_attn.q_proj.weight").data();
  const Tensor o = full.parameter(layer + "self_attn.o_proj.weight").data();
  const Tensor k_bias = full.parameter(layer + "self_attn.k_proj.bias").data();
  EXPECT_EQ(shards[1].parameter(layer + "self_attn.q_proj.weight").data().to_vector(), q.narrow(0, 48, 48).to_vector());
  EXPECT_EQ(shards[1].parameter(layer + "self_attn.o_proj.weight").data().to_vector(), o.narrow(1, 48, 48).to_vector());
  EXPECT_EQ(shards[1].parameter(layer + "self_attn.k_proj.bias").data().to_vector(),
            k_bias.narrow(0, 16, 16).to_vector());
  EXPECT_EQ(shards[0].parameter(layer + "input_layernorm.weight").data().to_vector(),
            full.parameter(layer + "input_layernorm.weight").data().to_vector());
}

class EveryFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryFixture, ShardLogitsEqualTheWholeModel) {
  const std::string base = GetParam() == "qwen2_lora" ? "qwen2" : GetParam();  // the adapter has no batch of its own
  const testing::FixtureBatch batch = testing::fixture_batch(base);
  const Tensor expected = testing::logits_of(testing::tp_fixture_model(GetParam()), batch);
  for (int size : {2, 6}) {
    std::vector<CausalLM> shards = testing::shards_of(testing::tp_fixture_model(GetParam()), size, Device::cpu());
    const std::vector<Tensor> logits = shard_logits(shards, batch);
    for (std::size_t rank = 0; rank < logits.size(); ++rank)
      EXPECT_LE(max_relative_difference(logits[rank], expected), 1e-5) << "tp " << size << ", rank " << rank;
  }
}

TEST_P(EveryFixture, GreedyTokensEqualOneRankOnEveryRank) {
  CausalLM full = testing::tp_fixture_model(GetParam());
  std::vector<GenerationRequest> requests{testing::fixture_prompt_request(GetParam(), 32),
                                          {{7, 3, 9, 1, 4, 4, 30, 2, 11}, {}}};
  requests[1].options.max_new_tokens = 40;
  const std::vector<Tokens> one_rank = Engine(full).run(requests);
  for (int size : {2, 6}) {
    std::vector<CausalLM> shards = testing::shards_of(testing::tp_fixture_model(GetParam()), size, Device::cpu());
    const std::vector<std::vector<Tokens>> by_rank = testing::generate_on_ranks(shards, requests, {{.block_size = 8}});
    for (std::size_t rank = 0; rank < by_rank.size(); ++rank)
      EXPECT_EQ(by_rank[rank], one_rank) << "tp " << size << ", rank " << rank;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, EveryFixture, ::testing::ValuesIn(kFixtures));

// init_model's biases are zeros, as transformers initialises them: random ones here, so that a
// bias counted twice would show.
CausalLM tiny(models::Architecture arch) {
  CausalLM model =
      models::init_model(models::parse_config(models::tiny_config_json(arch), "tiny"), 5, {.dtype = DType::kF64});
  std::uint64_t offset = 0;
  for (const models::NamedParameter& p : model.named_parameters())
    if (p.name.ends_with(".bias")) {
      Tensor bias = p.variable.data();
      bias.copy_from(Tensor::uniform(bias.shape(), 9, offset++ * 1024, -0.5, 0.5, DType::kF64));
    }
  return model;
}

// Qwen3's tiny config has an o_proj bias; ChatGLM's add_bias_linear gives dense and
// dense_4h_to_h biases: summing the ranks' outputs must add each once.
TEST(TensorParallel, RowParallelBiasesCountOnce) {
  for (models::Architecture arch : {models::Architecture::kQwen3, models::Architecture::kChatGlm}) {
    const CausalLM full = tiny(arch);
    ASSERT_TRUE(full.config().o_bias);
    const testing::FixtureBatch batch{Tensor::from_values({3, 4, 5, 9, 1, 8, 2}, {7}, DType::kI64),
                                      Tensor::from_values({0, 1, 2, 0, 1, 2, 3}, {7}, DType::kI64),
                                      Tensor::from_values({0, 3, 7}, {3}, DType::kI32), Tensor()};
    const Tensor expected = testing::logits_of(full, batch);
    for (int size : {2, 4}) {
      std::vector<CausalLM> shards = testing::shards_of(tiny(arch), size, Device::cpu());
      for (const Tensor& logits : shard_logits(shards, batch))
        EXPECT_LE(max_relative_difference(logits, expected), 1e-12)
            << models::architecture_name(arch) << ", tp " << size;
    }
  }
}

// Sampled requests draw from their own seeded streams: every rank draws the same tokens.
TEST(TensorParallel, SeededSamplingAgreesOnEveryRank) {
  const CausalLM full = tiny(models::Architecture::kGlm4);
  std::vector<GenerationRequest> requests;
  for (std::uint64_t seed : {3, 4, 5}) {
    GenerationRequest r{{5, 6, 7, static_cast<std::int64_t>(seed)}, {}};
    r.options.max_new_tokens = 12;
    r.options.do_sample = true;
    r.options.seed = seed;
    r.options.repetition_penalty = seed == 4 ? 1.2 : 1.0;
    requests.push_back(r);
  }
  const std::vector<Tokens> one_rank = Engine(full).run(requests);
  std::vector<CausalLM> shards = testing::shards_of(tiny(models::Architecture::kGlm4), 2, Device::cpu());
  for (const std::vector<Tokens>& results : testing::generate_on_ranks(shards, requests, {{.max_batch = 2}}))
    EXPECT_EQ(results, one_rank);
}

TEST(TensorParallel, CancellingOnRankZeroStopsEveryRank) {
  std::vector<CausalLM> shards = testing::shards_of(tiny(models::Architecture::kQwen2), 2, Device::cpu());
  GenerationRequest request{{3, 4, 5}, {}};
  request.options.max_new_tokens = 30;
  std::vector<std::vector<Tokens>> by_rank(2);
  std::vector<int> streamed(2, 0);
  distributed::run_inprocess_ranks(2, std::chrono::minutes(5), [&](distributed::Communicator& comm) {
    const auto rank = static_cast<std::size_t>(comm.rank());
    TensorParallelEngine engine(shards[rank], comm);
    // Rank 1 would never stop on its own: only rank 0's answer counts.
    auto sink = [&streamed, rank](std::size_t, std::int64_t) { ++streamed[rank]; };
    by_rank[rank] = engine.run({request}, sink, [&] { return rank == 0 ? streamed[0] >= 5 : false; });
  });
  EXPECT_EQ(by_rank[0][0].size(), 5u);
  EXPECT_EQ(by_rank[1], by_rank[0]);
  EXPECT_EQ(streamed[1], 0) << "the sink is rank 0's";
}

TEST(TensorParallel, SizesThatCannotSplitAreRefusedByName) {
  const models::ModelConfig config = models::load_config(testing::fixture_dir("qwen2"));
  EXPECT_EQ(models::tensor_parallel_sizes(config), (std::vector<int>{1, 2, 6}));
  testing::expect_mentions(testing::error_of([&] { models::check_tensor_parallel_size(config, 3); }),
                           {"--tp 3", "2 kv heads", "3 ranks", "qwen2/config.json", "1, 2, 6"});
  testing::expect_mentions(testing::error_of([&] { models::check_tensor_parallel_size(config, 4); }),
                           {"6 attention heads do not divide by 4", "1, 2, 6"});
  models::ModelConfig wide = config;
  wide.intermediate_size = 100;
  testing::expect_mentions(testing::error_of([&] { models::shard_config(wide, 6); }),
                           {"intermediate_size 100 does not divide by 6", "1, 2"});
  const CausalLM with_lora = testing::tp_fixture_model("qwen2_lora");
  testing::expect_mentions(testing::error_of([&] {
                             models::shard_model(with_lora, {0, 2}, Device::cpu());
                           }),
                           {"LoRA", "merge_lora"});
}

// run_tensor_parallel without a launcher: in-process ranks, the LoRA merged before the split.
TEST(TensorParallel, RunnerGivesEveryInProcessRankItsShard) {
  GenerationRequest request = testing::fixture_prompt_request("qwen2_lora", 32);
  const std::vector<Tokens> one_rank = Engine(testing::tp_fixture_model("qwen2_lora")).run({request});
  std::vector<std::vector<Tokens>> by_rank(2);
  std::atomic<int> loads{0};
  auto load = [&] {
    ++loads;
    return testing::tp_fixture_model("qwen2_lora");
  };
  run_tensor_parallel({.size = 2}, load, [&](TensorParallelRank& rank) {
    EXPECT_EQ(rank.shard.config().num_heads, 3);
    TensorParallelEngine engine(rank.shard, rank.comm, {.engine = {}, .ranks_per_device = rank.ranks_per_device});
    by_rank[static_cast<std::size_t>(rank.comm.rank())] = engine.run({request});
  });
  EXPECT_EQ(loads, 1) << "one whole model per process";
  for (const auto& results : by_rank) EXPECT_EQ(results, one_rank);
}

}  // namespace
}  // namespace zt::infer
