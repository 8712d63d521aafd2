// ZeRO stages 0-2 on in-process ranks against the single-device optimizer on the whole
// global batch: the same parameters after several steps with accumulation, for bucket sizes
// that split parameters unevenly; optimizer state saved from 3 ranks resumes on 2.
#include <gtest/gtest.h>

#include <mutex>

#include "autograd/functions.h"
#include "distributed/communicators/inprocess_communicator.h"
#include "tests/common/op_test_util.h"
#include "train/zero/zero_optimizer.h"

namespace zt::train {
namespace {

using autograd::Variable;
using namespace std::chrono_literals;

struct Model {
  Variable weight{testing::random_tensor({3, 5}, 1, DType::kF32), true, "w"};
  Variable bias{testing::random_tensor({3}, 2, DType::kF32), true, "b"};
  Variable scale{testing::random_tensor({7}, 3, DType::kF32), true, "s"};
  std::vector<TrainableParameter> parameters() { return {{"w", weight, true}, {"b", bias, false}, {"s", scale, true}}; }
  // Backward of the loss of micro-batch `micro` of rank `rank`.
  void backward(int rank, int micro) {
    Tensor x = testing::random_tensor({4, 5}, 100 + 10 * rank + micro, DType::kF32);
    Variable y = autograd::linear(Variable(x), weight, bias);
    Variable loss = autograd::add(autograd::sum(autograd::mul(y, y)), autograd::sum(autograd::mul(scale, scale)));
    autograd::scale(loss, 0.1).backward();
  }
  std::vector<std::vector<double>> values() const {
    return {weight.data().to_vector(), bias.data().to_vector(), scale.data().to_vector()};
  }
};

OptimizerConfig config() {
  OptimizerConfig c;
  c.weight_decay = 0.1;
  return c;
}

// The reference: one device, every rank's micro-batches in one accumulation window.
std::vector<std::vector<double>> reference(int world, int steps, int micro_batches) {
  Model model;
  Optimizer optimizer(model.parameters(), config());
  for (int step = 1; step <= steps; ++step) {
    for (int rank = 0; rank < world; ++rank)
      for (int micro = 0; micro < micro_batches; ++micro) model.backward(rank, micro + step * 10);
    optimizer.step(1e-2, 1.0, 0.5, step);
    optimizer.zero_grad();
  }
  return model.values();
}

void expect_close(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b,
                  const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t p = 0; p < a.size(); ++p)
    for (std::size_t i = 0; i < a[p].size(); ++i)
      EXPECT_NEAR(a[p][i], b[p][i], 2e-6) << what << " param " << p << "[" << i << "]";
}

class ZeroStages : public ::testing::TestWithParam<std::tuple<int, std::int64_t>> {};

TEST_P(ZeroStages, MatchTheSingleDeviceOptimizerOnTheGlobalBatch) {
  const auto [stage, bucket] = GetParam();
  constexpr int kWorld = 3, kSteps = 3, kMicro = 2;
  auto expected = reference(kWorld, kSteps, kMicro);
  std::mutex mutex;
  std::vector<std::vector<std::vector<double>>> results(kWorld);
  distributed::run_inprocess_ranks(kWorld, 10s, [&](distributed::Communicator& comm) {
    Model model;
    ZeroOptimizer optimizer(model.parameters(), config(), comm, stage, bucket);
    for (int step = 1; step <= kSteps; ++step) {
      for (int micro = 0; micro < kMicro; ++micro) model.backward(comm.rank(), micro + step * 10);
      StepResult r = optimizer.step(1e-2, 1.0, 0.5, step);
      EXPECT_FALSE(r.skipped);
      optimizer.zero_grad();
    }
    std::lock_guard<std::mutex> lock(mutex);
    results[comm.rank()] = model.values();
  });
  for (int rank = 0; rank < kWorld; ++rank)
    expect_close(
        results[rank], expected,
        "stage " + std::to_string(stage) + " bucket " + std::to_string(bucket) + " rank " + std::to_string(rank));
}

INSTANTIATE_TEST_SUITE_P(StagesAndBuckets, ZeroStages,
                         ::testing::Combine(::testing::Values(0, 1, 2), ::testing::Values<std::int64_t>(4, 11, 1000)));

TEST(ZeroLayout, ChunksCoverEveryElementOnceWithPadding) {
  ZeroLayout layout = make_zero_layout({15, 3, 7}, 4, 9);
  std::vector<int> covered(25, 0);
  const std::int64_t starts[] = {0, 15, 18};
  for (std::size_t b = 0; b < layout.buckets.size(); ++b) {
    EXPECT_EQ(layout.buckets[b].padded_numel % 4, 0);
    for (int rank = 0; rank < 4; ++rank)
      for (const OwnedPiece& piece : layout.owned_pieces(b, rank))
        for (std::int64_t i = 0; i < piece.numel; ++i) ++covered[starts[piece.parameter] + piece.parameter_offset + i];
  }
  for (int c : covered) EXPECT_EQ(c, 1);
  EXPECT_EQ(layout.buckets[0].parameters.front(), 2u);  // backward order: the last parameter first
}

TEST(ZeroState, SavedOnThreeRanksResumesOnTwo) {
  std::map<std::string, Tensor> saved;
  std::vector<std::vector<double>> after_save;
  std::mutex mutex;
  distributed::run_inprocess_ranks(3, 10s, [&](distributed::Communicator& comm) {
    Model model;
    ZeroOptimizer optimizer(model.parameters(), config(), comm, 2, 4);
    model.backward(comm.rank(), 0);
    optimizer.step(1e-2, 1.0, 0.0, 1);
    auto state = optimizer.state_dict();
    std::lock_guard<std::mutex> lock(mutex);
    if (comm.rank() == 0) {
      for (auto& [name, tensor] : state) saved[name] = tensor.clone();
      after_save = model.values();
    }
  });
  // The single-device optimizer's state after the same step, for comparison.
  Model single;
  Optimizer optimizer(single.parameters(), config());
  for (int rank = 0; rank < 3; ++rank) single.backward(rank, 0);
  optimizer.step(1e-2, 1.0, 0.0, 1);
  for (auto& [name, tensor] : optimizer.state_dict()) {
    ASSERT_TRUE(saved.count(name)) << name;
    EXPECT_LE(max_abs_diff(saved[name], tensor), 2e-6) << name;
  }
  distributed::run_inprocess_ranks(2, 10s, [&](distributed::Communicator& comm) {
    Model model;
    ZeroOptimizer resumed(model.parameters(), config(), comm, 1, 5);
    resumed.load_state_dict(saved);
    expect_close(model.values(), after_save, "weights restored from the state");
  });
}

}  // namespace
}  // namespace zt::train
