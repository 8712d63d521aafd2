// ZeRO stages 0-2 on in-process ranks against the single-device optimizer on the whole
// global batch: the same parameters after several steps with accumulation, for bucket sizes
// that split parameters unevenly, with and without overlap_comm, and with optimizer offload
// (the gradient partition in host memory); stage 2 holds its fp32 gradient partition and at
// most two gradient buckets, never a full-size gradient; optimizer state saved from 3 ranks
// resumes on 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "autograd/functions.h"
#include "distributed/communicators/inprocess_communicator.h"
#include "tests/common/op_test_util.h"
#include "tests/train/zero/stage2_test_util.h"
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

class ZeroStages : public ::testing::TestWithParam<std::tuple<int, std::int64_t, bool>> {};

TEST_P(ZeroStages, MatchTheSingleDeviceOptimizerOnTheGlobalBatch) {
  const auto [stage, bucket, overlap] = GetParam();
  constexpr int kWorld = 3, kSteps = 3, kMicro = 2;
  auto expected = reference(kWorld, kSteps, kMicro);
  std::mutex mutex;
  std::vector<std::vector<std::vector<double>>> results(kWorld);
  distributed::run_inprocess_ranks(kWorld, 10s, [&](distributed::Communicator& comm) {
    Model model;
    ZeroOptimizer optimizer(model.parameters(), config(), comm, stage, bucket, {}, {.overlap = overlap});
    for (int step = 1; step <= kSteps; ++step) {
      for (int micro = 0; micro < kMicro; ++micro) {
        model.backward(comm.rank(), micro + step * 10);
        optimizer.end_micro_batch();
      }
      StepResult r = optimizer.step(1e-2, 1.0, 0.5, step);
      EXPECT_FALSE(r.skipped);
      optimizer.zero_grad();
    }
    std::lock_guard<std::mutex> lock(mutex);
    results[comm.rank()] = model.values();
  });
  for (int rank = 0; rank < kWorld; ++rank)
    expect_close(results[rank], expected,
                 "stage " + std::to_string(stage) + " bucket " + std::to_string(bucket) +
                     (overlap ? " overlapped" : "") + " rank " + std::to_string(rank));
}

INSTANTIATE_TEST_SUITE_P(StagesAndBuckets, ZeroStages,
                         ::testing::Combine(::testing::Values(0, 1, 2), ::testing::Values<std::int64_t>(4, 11, 1000),
                                            ::testing::Bool()));

// With optimizer offload the rank's fp32 gradient partition is the offload's host block, as
// DeepSpeed keeps it (GradientPlacement::kHost): each reduced chunk is added there by the CPU
// threads (three here, so chunks are split between them), the device holds no gradient
// partition, and the update copies only the new weights back. Over an accumulation window it
// may instead be summed where the gradients are made and copied to the host once a step
// (kDevice, what kAuto picks on a GPU when it fits): the update then copies the gradients out
// as well. Either way the result is that of the single-device optimizer, and every step
// reports its offload work for the log.
class ZeroOffload : public ::testing::TestWithParam<GradientPlacement> {};

TEST_P(ZeroOffload, EndsOnTheSingleDeviceOptimizerWhereverTheGradientsAccumulate) {
  const bool on_device = GetParam() == GradientPlacement::kDevice;
  constexpr int kWorld = 3, kSteps = 3, kMicro = 2;
  const auto expected = reference(kWorld, kSteps, kMicro);
  for (const int stage : {1, 2}) {
    std::mutex mutex;
    std::vector<std::vector<std::vector<double>>> results(kWorld);
    distributed::run_inprocess_ranks(kWorld, 10s, [&](distributed::Communicator& comm) {
      Model model;
      const OffloadOptions offload{.enabled = true, .threads = 3, .gradients = GetParam(), .accumulation = kMicro};
      ZeroOptimizer optimizer(model.parameters(), config(), comm, stage, 11, offload, {});
      for (int step = 1; step <= kSteps; ++step) {
        for (int micro = 0; micro < kMicro; ++micro) {
          model.backward(comm.rank(), micro + step * 10);
          optimizer.end_micro_batch();
        }
        EXPECT_FALSE(optimizer.step(1e-2, 1.0, 0.5, step).skipped);
        optimizer.zero_grad();
        const std::optional<OffloadStepTimes> times = optimizer.offload_times();
        ASSERT_TRUE(times.has_value());
        EXPECT_GT(times->cpu_seconds, 0.0);
        EXPECT_GE(times->hidden(), 0.0);
        EXPECT_LE(times->hidden(), 1.0);
      }
      const std::int64_t partition = optimizer.layout().partition_numel;
      std::lock_guard<std::mutex> lock(mutex);
      ASSERT_NE(optimizer.offload(), nullptr);
      EXPECT_EQ(optimizer.offload()->last_step().copied_bytes, (on_device ? 8 : 4) * partition)
          << "the f32 weights back, and the gradients out only from the device";
      if (stage == 2) {
        EXPECT_EQ(optimizer.held_buffers().gradient_bytes, on_device ? 4 * partition : 0)
            << "the gradient partition on the device or not";
      }
      results[comm.rank()] = model.values();
    });
    for (int rank = 0; rank < kWorld; ++rank)
      expect_close(results[rank], expected,
                   "offloaded stage " + std::to_string(stage) + (on_device ? " with device gradients" : "") + " rank " +
                       std::to_string(rank));
  }
}

INSTANTIATE_TEST_SUITE_P(GradientPlacements, ZeroOffload,
                         ::testing::Values(GradientPlacement::kHost, GradientPlacement::kDevice));

TEST(GradientPlacement, AutoKeepsThePartitionOnTheDeviceOnlyWhenAccumulatingAndItFits) {
  constexpr std::int64_t kGiB = std::int64_t{1} << 30;
  EXPECT_TRUE(gradients_stay_on_device(GradientPlacement::kAuto, 8, 6 * kGiB, 80 * kGiB));
  EXPECT_FALSE(gradients_stay_on_device(GradientPlacement::kAuto, 1, 6 * kGiB, 80 * kGiB)) << "nothing to accumulate";
  EXPECT_FALSE(gradients_stay_on_device(GradientPlacement::kAuto, 8, 28 * kGiB, 24 * kGiB))
      << "a 7B partition on 24 GiB";
  EXPECT_TRUE(gradients_stay_on_device(GradientPlacement::kAuto, 4, 6 * kGiB, 24 * kGiB));
  EXPECT_FALSE(gradients_stay_on_device(GradientPlacement::kAuto, 4, 7 * kGiB, 24 * kGiB)) << "over a quarter";
  EXPECT_FALSE(gradients_stay_on_device(GradientPlacement::kAuto, 8, 1, 0)) << "a CPU run keeps the host block";
  EXPECT_TRUE(gradients_stay_on_device(GradientPlacement::kDevice, 1, 28 * kGiB, 0));
  EXPECT_FALSE(gradients_stay_on_device(GradientPlacement::kHost, 8, 1, 80 * kGiB));
}

// Four layers of linear(8 -> 8) with bias and tanh: 288 trainable elements, each parameter a
// bucket of its own with buckets of 8 elements, whose gradients backward finishes layer by
// layer.
struct DeepModel : TanhLayers {
  DeepModel() : TanhLayers({.layers = 4, .width = 8, .rows = 4}) {}
};

// What stage 2 may hold of gradients on a rank: its fp32 partition (Ψ/N, padding included),
// two staged buckets (the two largest) and one reduction output (the largest chunk).
std::int64_t stage2_gradient_bound(const ZeroLayout& layout) {
  return 4 * layout.partition_numel + staging_bound(layout, 4);
}

// Measured from outside the engine: a second gradient hook on every parameter reads what the
// engine holds each time backward delivers a gradient (right after the engine has staged or
// reduced it), and between micro-batches. Stage 2 must stay within its partition and two
// buckets; stage 1, which accumulates full fp32 gradients, must not (the measure sees them).
TEST(ZeroStage2, HoldsItsGradientPartitionAndTwoBucketsNeverAFullGradient) {
  constexpr int kWorld = 3;
  constexpr std::int64_t kBucket = 8, kTrainable = 4 * (64 + 8);
  for (const bool overlap : {false, true}) {
    std::mutex mutex;
    distributed::run_inprocess_ranks(kWorld, 10s, [&](distributed::Communicator& comm) {
      std::map<int, std::int64_t> most_held;
      for (int stage : {1, 2}) {
        DeepModel model;
        ZeroOptimizer optimizer(model.parameters(), config(), comm, stage, kBucket, {}, {.overlap = overlap});
        std::int64_t& most = most_held[stage];
        auto sample = [&] { most = std::max(most, optimizer.held_buffers().gradient_bytes); };
        for (Variable& v : model.weights) v.add_grad_ready_hook([&](const Tensor&) { sample(); });
        for (Variable& v : model.biases) v.add_grad_ready_hook([&](const Tensor&) { sample(); });
        for (int step = 1; step <= 2; ++step) {
          for (int micro = 0; micro < 2; ++micro) {
            model.backward(comm.rank(), micro + 10 * step);
            optimizer.end_micro_batch();
            sample();
          }
          optimizer.step(1e-2, 1.0, 0.0, step);
          optimizer.zero_grad();
        }
        if (stage == 2) {
          const ZeroLayout& layout = optimizer.layout();
          ASSERT_EQ(layout.buckets.size(), 8u);
          std::lock_guard<std::mutex> lock(mutex);
          EXPECT_LE(most, stage2_gradient_bound(layout)) << "overlap " << overlap;
          EXPECT_LE(4 * layout.partition_numel + optimizer.most_staged_gradient_bytes(), stage2_gradient_bound(layout))
              << "overlap " << overlap;
          // Far below one full fp32 gradient beside the partition, which stage 1 holds.
          EXPECT_LT(most, 4 * (layout.partition_numel + kTrainable)) << "overlap " << overlap;
          EXPECT_EQ(optimizer.held_buffers().gradient_bytes, 4 * layout.partition_numel);
        }
      }
      std::lock_guard<std::mutex> lock(mutex);
      EXPECT_GE(most_held[1], 4 * kTrainable) << "stage 1 keeps full gradients; the measure must see them";
    });
  }
}

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
