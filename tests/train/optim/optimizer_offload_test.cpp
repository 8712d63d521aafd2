// Optimizer offload on the CPU (host-to-host copies): the single-device optimizer and ZeRO
// stages 1 and 2 on 1-3 in-process ranks reach the same weights and optimizer state as
// without offload, with clipping, accumulation, L2 or decoupled decay, 16-bit working
// weights and tiles that cut parameters; checkpoints move between offloaded and
// non-offloaded runs; a non-finite gradient skips the step. Partial offload (ratio below 1)
// splits the partition between the device and the CPU Adam with the same results, and its
// checkpoints move to and from plain and fully offloaded runs.
#include <gtest/gtest.h>

#include <limits>
#include <mutex>

#include "autograd/functions.h"
#include "distributed/communicators/inprocess_communicator.h"
#include "tests/common/op_test_util.h"
#include "train/memory_estimate.h"
#include "train/zero/zero_optimizer.h"

namespace zt::train {
namespace {

using autograd::Variable;
using Values = std::vector<std::vector<double>>;
using namespace std::chrono_literals;

struct Model {
  explicit Model(DType dtype = DType::kF32)
      : weight(testing::random_tensor({3, 5}, 1, dtype), true, "w"),
        bias(testing::random_tensor({3}, 2, dtype), true, "b"),
        scale(testing::random_tensor({7}, 3, dtype), true, "s") {}
  Variable weight, bias, scale;
  std::vector<TrainableParameter> parameters() { return {{"w", weight, true}, {"b", bias, false}, {"s", scale, true}}; }
  void backward(int rank, int micro) {
    Tensor x = testing::random_tensor({4, 5}, 100 + 10 * rank + micro, weight.data().dtype());
    Variable y = autograd::linear(Variable(x), weight, bias);
    Variable loss = autograd::add(autograd::sum(autograd::mul(y, y)), autograd::sum(autograd::mul(scale, scale)));
    autograd::scale(loss, 0.1).backward();
  }
  Values values() const { return {weight.data().to_vector(), bias.data().to_vector(), scale.data().to_vector()}; }
};

OptimizerConfig config(bool decoupled = true) {
  OptimizerConfig c;
  c.weight_decay = 0.1;
  c.decoupled_weight_decay = decoupled;
  return c;
}

// Small tiles and two threads, so tiles cut parameters and the CPU Adam splits its work.
OffloadOptions offload(double ratio = 1.0) {
  return {.enabled = true, .pin_memory = true, .tile_numel = 4, .threads = 2, .ratio = ratio};
}

constexpr int kSteps = 3, kMicro = 2;

void expect_equal(const Values& actual, const Values& expected, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t p = 0; p < actual.size(); ++p)
    for (std::size_t i = 0; i < actual[p].size(); ++i)
      EXPECT_NEAR(actual[p][i], expected[p][i], 1e-6 * std::abs(expected[p][i]) + 1e-12)
          << what << " param " << p << "[" << i << "]";
}

void expect_same_state(const std::map<std::string, Tensor>& actual, const std::map<std::string, Tensor>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (const auto& [name, tensor] : expected) {
    ASSERT_TRUE(actual.count(name)) << name;
    EXPECT_EQ(actual.at(name).shape(), tensor.shape()) << name;
    EXPECT_LE(relative_error(actual.at(name), tensor), 1e-6) << name;
  }
}

// Trains `steps` steps on one device: every micro-batch of `world` ranks in one window.
Values train_single(DType dtype, bool decoupled, const OffloadOptions& options, int world = 1) {
  Model model(dtype);
  Optimizer optimizer(model.parameters(), config(decoupled), options);
  for (int step = 1; step <= kSteps; ++step) {
    for (int rank = 0; rank < world; ++rank)
      for (int micro = 0; micro < kMicro; ++micro) model.backward(rank, micro + step * 10);
    EXPECT_FALSE(optimizer.step(1e-2, 2.0, 0.5, step).skipped);
    optimizer.zero_grad();
  }
  // Ratio 0 leaves nothing to the host: no offload at all.
  EXPECT_EQ(optimizer.offload() != nullptr, options.enabled && options.ratio > 0.0);
  return model.values();
}

class SingleDeviceOffload : public ::testing::TestWithParam<std::tuple<DType, bool>> {};

TEST_P(SingleDeviceOffload, MatchesTheOptimizerWithoutOffload) {
  const auto [dtype, decoupled] = GetParam();
  expect_equal(train_single(dtype, decoupled, offload()), train_single(dtype, decoupled, {}), "single device");
}

INSTANTIATE_TEST_SUITE_P(WorkingDtypesAndDecay, SingleDeviceOffload,
                         ::testing::Combine(::testing::Values(DType::kF32, DType::kBF16, DType::kF16),
                                            ::testing::Bool()));

// Trains `steps` steps on `world` in-process ranks; returns each rank's weights.
std::vector<Values> train_zero(int world, int stage, bool decoupled, const OffloadOptions& options) {
  std::mutex mutex;
  std::vector<Values> results(world);
  distributed::run_inprocess_ranks(world, 10s, [&](distributed::Communicator& comm) {
    Model model;
    ZeroOptimizer optimizer(model.parameters(), config(decoupled), comm, stage, 11, options);
    for (int step = 1; step <= kSteps; ++step) {
      for (int micro = 0; micro < kMicro; ++micro) model.backward(comm.rank(), micro + step * 10);
      EXPECT_FALSE(optimizer.step(1e-2, 1.0, 0.5, step).skipped);
      optimizer.zero_grad();
    }
    if (options.enabled && options.ratio > 0.0) {
      EXPECT_GT(optimizer.offload()->last_step().parameters, 0);
      EXPECT_NE(optimizer.offload()->report().find("parameters/s"), std::string::npos);
    }
    std::lock_guard<std::mutex> lock(mutex);
    results[comm.rank()] = model.values();
  });
  return results;
}

class ZeroOffload : public ::testing::TestWithParam<std::tuple<int, int, bool>> {};

TEST_P(ZeroOffload, MatchesTheSameStageWithoutOffload) {
  const auto [stage, world, decoupled] = GetParam();
  const std::vector<Values> expected = train_zero(world, stage, decoupled, {});
  const std::vector<Values> actual = train_zero(world, stage, decoupled, offload());
  for (int rank = 0; rank < world; ++rank)
    expect_equal(actual[rank], expected[rank], "stage " + std::to_string(stage) + " rank " + std::to_string(rank));
}

INSTANTIATE_TEST_SUITE_P(StagesAndWorlds, ZeroOffload,
                         ::testing::Combine(::testing::Values(1, 2), ::testing::Values(1, 2, 3), ::testing::Bool()));

// One step on `world` ranks, the state saved; the state loaded into a fresh optimizer on
// `resume_world` ranks and one more step: returns (state after step 1, weights after step 2).
std::pair<std::map<std::string, Tensor>, Values> save_and_resume(int world, const OffloadOptions& saving,
                                                                 int resume_world, const OffloadOptions& resuming) {
  std::map<std::string, Tensor> saved;
  std::mutex mutex;
  distributed::run_inprocess_ranks(world, 10s, [&](distributed::Communicator& comm) {
    Model model;
    ZeroOptimizer optimizer(model.parameters(), config(), comm, 2, 5, saving);
    model.backward(comm.rank(), 0);
    optimizer.step(1e-2, 1.0, 0.0, 1);
    auto state = optimizer.state_dict();
    std::lock_guard<std::mutex> lock(mutex);
    if (comm.rank() == 0)
      for (auto& [name, tensor] : state) saved[name] = tensor.clone();
  });
  Values after;
  distributed::run_inprocess_ranks(resume_world, 10s, [&](distributed::Communicator& comm) {
    Model model;
    ZeroOptimizer optimizer(model.parameters(), config(), comm, 1, 7, resuming);
    optimizer.load_state_dict(saved);
    model.backward(comm.rank(), 1);
    optimizer.step(1e-2, 1.0, 0.0, 2);
    std::lock_guard<std::mutex> lock(mutex);
    if (comm.rank() == 0) after = model.values();
  });
  return {saved, after};
}

TEST(OffloadCheckpoint, ResumesWithoutOffloadAndBack) {
  const auto [plain_state, plain_after] = save_and_resume(3, {}, 2, {});
  const auto [offloaded_state, offload_to_plain] = save_and_resume(3, offload(), 2, {});
  const auto [ignored, plain_to_offload] = save_and_resume(3, {}, 2, offload());
  expect_same_state(offloaded_state, plain_state);
  expect_equal(offload_to_plain, plain_after, "offloaded checkpoint resumed without offload");
  expect_equal(plain_to_offload, plain_after, "checkpoint resumed with offload");
}

TEST(OffloadCheckpoint, SingleDeviceStateMatchesAndLoads) {
  Model plain_model, offloaded_model;
  Optimizer plain(plain_model.parameters(), config());
  Optimizer offloaded(offloaded_model.parameters(), config(), offload());
  for (Model* m : {&plain_model, &offloaded_model}) m->backward(0, 0);
  plain.step(1e-2, 1.0, 0.0, 1);
  offloaded.step(1e-2, 1.0, 0.0, 1);
  expect_same_state(offloaded.state_dict(), plain.state_dict());
  Model resumed_model;
  Optimizer resumed(resumed_model.parameters(), config(), offload());
  resumed.load_state_dict(plain.state_dict());
  expect_equal(resumed_model.values(), plain_model.values(), "weights restored from the state");
}

// The host's share is the nearest to the ratio in whole spans: w (15 elements), b (3), s (7).
TEST(PartialOffload, TheCpuAdamTakesTheRatioInWholeSpans) {
  for (const auto& [ratio, on_host] :
       std::vector<std::pair<double, std::int64_t>>{{1.0, 25}, {0.8, 25}, {0.5, 10}, {0.3, 7}, {0.1, 0}}) {
    Model model;
    Optimizer optimizer(model.parameters(), config(), offload(ratio));
    EXPECT_EQ(optimizer.offload() == nullptr ? 0 : optimizer.offload()->numel(), on_host) << "ratio " << ratio;
    const HeldModelStates held = held_model_states(optimizer, 0);
    EXPECT_EQ(held.host.optimizer_state, 12 * on_host) << "ratio " << ratio;
    EXPECT_EQ(held.gpu.optimizer_state, 12 * (25 - on_host)) << "ratio " << ratio;
  }
}

class PartialOffloadSingleDevice : public ::testing::TestWithParam<std::tuple<double, DType>> {};

TEST_P(PartialOffloadSingleDevice, MatchesTheOptimizerWithoutOffload) {
  const auto [ratio, dtype] = GetParam();
  expect_equal(train_single(dtype, true, offload(ratio)), train_single(dtype, true, {}),
               "single device, ratio " + std::to_string(ratio));
}

INSTANTIATE_TEST_SUITE_P(Ratios, PartialOffloadSingleDevice,
                         ::testing::Combine(::testing::Values(0.0, 0.3, 0.5, 0.8),
                                            ::testing::Values(DType::kF32, DType::kBF16)));

TEST(PartialOffload, ZeroStagesMatchTheSameStageWithoutOffload) {
  for (const int stage : {1, 2})
    for (const int world : {1, 3}) {
      const std::vector<Values> expected = train_zero(world, stage, false, {});
      const std::vector<Values> actual = train_zero(world, stage, false, offload(0.5));
      for (int rank = 0; rank < world; ++rank)
        expect_equal(actual[rank], expected[rank],
                     "partial offload, stage " + std::to_string(stage) + " rank " + std::to_string(rank));
    }
}

TEST(PartialOffload, CheckpointsMoveToAndFromPlainAndFullOffload) {
  const auto [plain_state, plain_after] = save_and_resume(3, {}, 2, {});
  const auto [partial_state, partial_to_plain] = save_and_resume(3, offload(0.5), 2, {});
  const auto [ignored, plain_to_partial] = save_and_resume(3, {}, 2, offload(0.4));
  const auto [ignored_too, partial_to_full] = save_and_resume(3, offload(0.6), 2, offload());
  expect_same_state(partial_state, plain_state);
  expect_equal(partial_to_plain, plain_after, "partially offloaded checkpoint resumed without offload");
  expect_equal(plain_to_partial, plain_after, "checkpoint resumed with partial offload");
  expect_equal(partial_to_full, plain_after, "partially offloaded checkpoint resumed with full offload");
}

TEST(Offload, NonFiniteGradientSkipsTheStep) {
  Model model;
  Optimizer optimizer(model.parameters(), config(), offload());
  model.backward(0, 0);
  const Values before = model.values();
  optimizer.gradient(1).data<float>()[2] = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(optimizer.step(1e-2, 1.0, 0.0, 1).skipped);
  expect_equal(model.values(), before, "after a skipped step");
}

TEST(PartialOffload, NonFiniteGradientSkipsTheStepOnBothSides) {
  for (const std::size_t poisoned : {std::size_t{0}, std::size_t{2}}) {  // w on the device, s on the host
    Model model;
    Optimizer optimizer(model.parameters(), config(), offload(0.3));
    model.backward(0, 0);
    const Values before = model.values();
    optimizer.gradient(poisoned).data<float>()[1] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_TRUE(optimizer.step(1e-2, 1.0, 0.0, 1).skipped);
    expect_equal(model.values(), before, "after a skipped step");
  }
}

}  // namespace
}  // namespace zt::train
