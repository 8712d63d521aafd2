// Tensor-parallel inference with two in-process ranks sharing one GPU: in bfloat16 the same
// greedy tokens as the whole model on that GPU, on every rank; in float32 a shard's logits
// equal to the whole model's. The shards are cut from a model loaded on the host, as
// `zerotune generate --tp N` cuts them.
#include <gtest/gtest.h>

#include <cmath>

#include "infer/engine.h"
#include "tests/tensor_parallel_test_util.h"
#include "tests/test_util.h"

namespace zt::infer {
namespace {

using testing::Tokens;

const Device kGpu = Device::cuda(0);
constexpr TensorParallelOptions kSharedGpu{.engine = {}, .ranks_per_device = 2};

class OnTheGpu : public ::testing::TestWithParam<std::string> {};

TEST_P(OnTheGpu, Bf16GreedyTokensEqualOneRankOnEveryRank) {
  ZT_SKIP_WITHOUT_GPU();
  const std::vector<GenerationRequest> requests{testing::fixture_prompt_request(GetParam(), 32)};
  const Tokens one_rank = Engine(testing::tp_fixture_model(GetParam(), kGpu, DType::kBF16)).run(requests)[0];
  std::vector<models::CausalLM> shards =
      testing::shards_of(testing::tp_fixture_model(GetParam(), Device::cpu(), DType::kBF16), 2, kGpu);
  const std::vector<std::vector<Tokens>> by_rank = testing::generate_on_ranks(shards, requests, kSharedGpu);
  for (std::size_t rank = 0; rank < by_rank.size(); ++rank) {
    const Tokens& tokens = by_rank[rank][0];
    ASSERT_EQ(tokens.size(), 32u);
    const auto first_difference = std::mismatch(tokens.begin(), tokens.end(), one_rank.begin()).first - tokens.begin();
    EXPECT_EQ(tokens, one_rank) << "rank " << rank << " differs first at new token " << first_difference;
  }
}

TEST_P(OnTheGpu, F32ShardLogitsEqualTheWholeModel) {
  ZT_SKIP_WITHOUT_GPU();
  const testing::FixtureBatch batch = testing::fixture_batch(GetParam());
  const std::vector<double> expected =
      testing::logits_of(testing::tp_fixture_model(GetParam(), kGpu, DType::kF32), batch).to_vector();
  std::vector<models::CausalLM> shards = testing::shards_of(testing::tp_fixture_model(GetParam()), 2, kGpu);
  std::vector<std::vector<double>> logits(2);
  distributed::run_inprocess_ranks(2, std::chrono::minutes(5), [&](distributed::Communicator& comm) {
    models::CausalLM& shard = shards[static_cast<std::size_t>(comm.rank())];
    shard.set_partial_sum_reducer([&comm](const Tensor& t) { comm.all_reduce(t); });
    logits[static_cast<std::size_t>(comm.rank())] = testing::logits_of(shard, batch).to_vector();
  });
  double largest = 0.0;
  for (double e : expected) largest = std::max(largest, std::abs(e));
  for (std::size_t rank = 0; rank < logits.size(); ++rank)
    for (std::size_t i = 0; i < expected.size(); ++i)
      ASSERT_NEAR(logits[rank][i], expected[i], 1e-4 * largest) << "rank " << rank << ", logit " << i;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, OnTheGpu, ::testing::Values("qwen2", "qwen3", "glm", "glm4", "chatglm"));

}  // namespace
}  // namespace zt::infer
