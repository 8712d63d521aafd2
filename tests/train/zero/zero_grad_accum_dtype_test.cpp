// ZeRO stages 1 and 2 keep their gradients in DeepSpeed's grad_accum_dtype (train/zero/
// zero_engine.h), tested on 2 in-process ranks with a bf16 model on the CPU: by default the
// partition (and stage 1's whole gradients) are bf16, holding what the rounding rules give
// from each rank's own bf16 gradients (stage 2: each micro-batch's sum over ranks added and
// rounded once; stage 1: each rank's whole gradient rounded every micro-batch, the sum over
// ranks rounded at the boundary); a step's new masters are AdamW's from those bf16 gradients,
// with decoupled and with L2 weight decay; "fp32" keeps an fp32 partition; stage 0, one rank
// and optimizer offload stay fp32; a third dtype is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>

#include "autograd/functions.h"
#include "distributed/communicators/inprocess_communicator.h"
#include "ops/elementwise/accumulate.h"
#include "ops/optim/adamw.h"
#include "tests/common/op_test_util.h"
#include "train/zero/zero_optimizer.h"

namespace zt::train {
namespace {

using autograd::Variable;
using namespace std::chrono_literals;

constexpr int kWorld = 2;
constexpr int kMicroBatches = 3;
constexpr std::int64_t kBucket = 6;  // parameters split over buckets unevenly
constexpr double kLr = 1e-2, kDecay = 0.1;

// Three bf16 parameters on the CPU: w and s decay, b does not.
struct Model {
  Variable weight{testing::random_tensor({3, 5}, 1, DType::kBF16), true, "w"};
  Variable bias{testing::random_tensor({3}, 2, DType::kBF16), true, "b"};
  Variable scale{testing::random_tensor({7}, 3, DType::kBF16), true, "s"};
  std::vector<TrainableParameter> parameters() { return {{"w", weight, true}, {"b", bias, false}, {"s", scale, true}}; }
  std::vector<Variable> variables() const { return {weight, bias, scale}; }
  void backward(int rank, int micro) {
    Tensor x = testing::random_tensor({4, 5}, 100 + 10 * rank + micro, DType::kBF16);
    Variable y = autograd::linear(Variable(x), weight, bias);
    Variable loss = autograd::add(autograd::sum(autograd::mul(y, y)), autograd::sum(autograd::mul(scale, scale)));
    autograd::scale(loss, 0.1).backward();
  }
};

// The engine's partition of gradients, which only engines read.
class Probe : public ZeroOptimizer {
 public:
  using ZeroOptimizer::ZeroOptimizer;
  const Tensor& gradients() const { return core().grads(); }
};

using Values = std::vector<std::vector<double>>;  // per parameter, flat

// fp32(a + b) for each element, then rounded to `dtype`: an fp32 addition's result (the
// exact sum of two floats of like magnitude fits a double) in `dtype`.
std::vector<double> add_and_round(const std::vector<double>& a, const std::vector<double>& b, DType dtype) {
  std::vector<double> sum(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) sum[i] = a[i] + b[i];
  const auto n = static_cast<std::int64_t>(sum.size());
  return Tensor::from_values(sum, {n}, DType::kF32).to(dtype).to_vector();
}

// Each rank's bf16 gradients of every micro-batch, from backward alone: [rank][micro][parameter].
std::vector<std::vector<Values>> rank_gradients() {
  std::vector<std::vector<Values>> all(kWorld);
  for (int rank = 0; rank < kWorld; ++rank) {
    Model model;
    for (int micro = 0; micro < kMicroBatches; ++micro) {
      model.backward(rank, micro);
      Values grads;
      for (const Variable& v : model.variables()) {
        EXPECT_EQ(v.grad().dtype(), DType::kBF16);
        grads.push_back(v.grad().to_vector());
        v.zero_grad();
      }
      all[static_cast<std::size_t>(rank)].push_back(grads);
    }
  }
  return all;
}

// What the rank's whole bf16 gradients are at the boundary: stage 2 adds each micro-batch's
// sum over ranks (fp32 collectives) and rounds; stage 1 rounds each rank's own accumulation,
// and the boundary's sum over ranks once.
Values expected_gradients(int stage) {
  const std::vector<std::vector<Values>> g = rank_gradients();
  Values total;
  for (std::size_t p = 0; p < g[0][0].size(); ++p) {
    const std::vector<double> zeros(g[0][0][p].size(), 0.0);
    if (stage == 2) {
      std::vector<double> partition = zeros;
      for (int micro = 0; micro < kMicroBatches; ++micro) {
        const std::vector<double> over_ranks = add_and_round(g[0][micro][p], g[1][micro][p], DType::kF32);
        partition = add_and_round(partition, over_ranks, DType::kBF16);
      }
      total.push_back(partition);
    } else {
      std::vector<std::vector<double>> whole(kWorld, zeros);
      for (int rank = 0; rank < kWorld; ++rank)
        for (int micro = 0; micro < kMicroBatches; ++micro)
          whole[rank] = add_and_round(whole[rank], g[rank][micro][p], DType::kBF16);
      total.push_back(add_and_round(whole[0], whole[1], DType::kBF16));
    }
  }
  return total;
}

// AdamW's first step on each parameter from its bf16 gradient, its fp32 master starting at
// the bf16 weights; with L2 decay the decay is added to an fp32 copy of the gradient first.
Values expected_masters(const Values& grads, const OptimizerConfig& config) {
  Model model;
  const std::vector<TrainableParameter> parameters = model.parameters();
  Values masters;
  for (std::size_t p = 0; p < grads.size(); ++p) {
    const Tensor weights = parameters[p].variable.data();
    const std::int64_t n = weights.numel();
    Tensor master = weights.to(DType::kF32).view({n}).contiguous();
    Tensor grad = Tensor::from_values(grads[p], {n}, DType::kBF16);
    const double decay = parameters[p].weight_decay ? kDecay : 0.0;
    ops::AdamWConfig adam{.lr = kLr, .hyperparameters = config, .step = 1, .grad_scale = 1.0};
    adam.hyperparameters.weight_decay = decay;
    if (!config.decoupled_weight_decay) {
      grad = grad.to(DType::kF32);
      ops::accumulate_(grad, master, decay);
      adam.hyperparameters.weight_decay = 0.0;
    }
    ops::adamw_step(master, Tensor::zeros({n}, DType::kF32, Device::cpu()),
                    Tensor::zeros({n}, DType::kF32, Device::cpu()), grad, adam);
    masters.push_back(master.to_vector());
  }
  return masters;
}

struct Outcome {
  std::vector<DType> partition_dtype = std::vector<DType>(kWorld);
  std::vector<Values> partition_as_whole = std::vector<Values>(kWorld);  // NaN where the rank owns nothing
  std::vector<Values> masters = std::vector<Values>(kWorld);             // NaN where the rank owns nothing
  double grad_norm = 0.0;
};

// kMicroBatches micro-batches and one step on 2 ranks: the partition (laid back onto the
// parameters) read before the step, the masters after it.
Outcome train(int stage, const OptimizerConfig& config, GradientReduction reduction) {
  Outcome run;
  std::mutex mutex;
  distributed::run_inprocess_ranks(kWorld, 30s, [&](distributed::Communicator& comm) {
    Model model;
    Probe optimizer(model.parameters(), config, comm, stage, kBucket, {}, reduction);
    for (int micro = 0; micro < kMicroBatches; ++micro) {
      model.backward(comm.rank(), micro);
      optimizer.end_micro_batch();
    }
    const StepResult result = optimizer.step(kLr, 1.0, 0.0, 1);
    std::lock_guard<std::mutex> lock(mutex);
    const auto r = static_cast<std::size_t>(comm.rank());
    run.grad_norm = result.grad_norm;
    const std::vector<Variable> variables = model.variables();
    for (const Variable& v : variables) {
      run.partition_as_whole[r].emplace_back(static_cast<std::size_t>(v.data().numel()), std::nan(""));
      run.masters[r].emplace_back(static_cast<std::size_t>(v.data().numel()), std::nan(""));
    }
    run.partition_dtype[r] = optimizer.gradients().dtype();
    const std::vector<double> partition = optimizer.gradients().to_vector();
    const ZeroLayout& layout = optimizer.layout();
    for (std::size_t b = 0; b < layout.buckets.size(); ++b)
      for (const OwnedPiece& piece : layout.owned_pieces(b, comm.rank()))
        for (std::int64_t i = 0; i < piece.numel; ++i)
          run.partition_as_whole[r][piece.parameter][static_cast<std::size_t>(piece.parameter_offset + i)] =
              partition[static_cast<std::size_t>(layout.partition_offset(b) + piece.chunk_offset + i)];
    for (const StateSlice& slice : optimizer.held_state()) {
      const std::size_t p = slice.name == "w" ? 0 : slice.name == "b" ? 1 : 2;
      const std::vector<double> master = slice.master.to_vector();
      for (std::int64_t i = slice.begin; i < slice.end; ++i)
        run.masters[r][p][static_cast<std::size_t>(i)] = master[static_cast<std::size_t>(i - slice.begin)];
    }
  });
  return run;
}

// Every element is owned by exactly one rank, whose value must equal `expected` bit for bit.
void expect_owned_values(const std::vector<Values>& by_rank, const Values& expected, const std::string& what) {
  for (std::size_t p = 0; p < expected.size(); ++p)
    for (std::size_t i = 0; i < expected[p].size(); ++i) {
      int owners = 0;
      for (const Values& rank : by_rank) {
        if (std::isnan(rank[p][i])) continue;
        ++owners;
        EXPECT_EQ(rank[p][i], expected[p][i]) << what << ", parameter " << p << " element " << i;
      }
      EXPECT_EQ(owners, 1) << what << ", parameter " << p << " element " << i;
    }
}

double norm_of(const Values& values) {
  double squares = 0.0;
  for (const auto& v : values)
    for (double x : v) squares += x * x;
  return std::sqrt(squares);
}

TEST(ZeroGradAccumDtype, Stages1And2HoldBf16GradientsRoundedAsDeepSpeedAndStepFromThem) {
  for (int stage : {1, 2})
    for (const bool decoupled : {true, false}) {
      const std::string what = "stage " + std::to_string(stage) + (decoupled ? " AdamW" : " L2 decay");
      OptimizerConfig config;
      config.weight_decay = kDecay;
      config.decoupled_weight_decay = decoupled;
      // fp32 collectives: the sum over ranks is exact in fp32 before the partition rounds it.
      const Outcome run = train(stage, config, {.dtype = DType::kF32});
      const Values grads = expected_gradients(stage);
      for (DType dtype : run.partition_dtype) EXPECT_EQ(dtype, DType::kBF16) << what;
      expect_owned_values(run.partition_as_whole, grads, what + " gradients");
      expect_owned_values(run.masters, expected_masters(grads, config), what + " masters");
      // The norm agreed over ranks is that of the bf16 gradients.
      EXPECT_NEAR(run.grad_norm, norm_of(grads), 1e-5 * norm_of(grads)) << what;
    }
}

TEST(ZeroGradAccumDtype, Bf16CollectivesRoundTheSumOverRanksBeforeThePartitionAdds) {
  // communication_data_type unset: the reduce-scatter is bf16 too, so each micro-batch's sum
  // is rounded to bf16 before it is added (and rounded again) into the partition.
  const Outcome run = train(2, OptimizerConfig{}, {});
  const std::vector<std::vector<Values>> g = rank_gradients();
  Values expected;
  for (std::size_t p = 0; p < g[0][0].size(); ++p) {
    std::vector<double> partition(g[0][0][p].size(), 0.0);
    for (int micro = 0; micro < kMicroBatches; ++micro)
      partition = add_and_round(partition, add_and_round(g[0][micro][p], g[1][micro][p], DType::kBF16), DType::kBF16);
    expected.push_back(partition);
  }
  for (DType dtype : run.partition_dtype) EXPECT_EQ(dtype, DType::kBF16);
  expect_owned_values(run.partition_as_whole, expected, "bf16 collectives");
}

TEST(ZeroGradAccumDtype, Fp32KeepsAnFp32PartitionWithTheExactSum) {
  for (int stage : {1, 2}) {
    const Outcome run = train(stage, OptimizerConfig{}, {.dtype = DType::kF32, .accumulation = DType::kF32});
    const std::vector<std::vector<Values>> g = rank_gradients();
    Values expected;
    for (std::size_t p = 0; p < g[0][0].size(); ++p) {
      std::vector<double> sum(g[0][0][p].size(), 0.0);
      for (int rank = 0; rank < kWorld; ++rank)
        for (int micro = 0; micro < kMicroBatches; ++micro) sum = add_and_round(sum, g[rank][micro][p], DType::kF32);
      expected.push_back(sum);
    }
    for (DType dtype : run.partition_dtype) EXPECT_EQ(dtype, DType::kF32) << "stage " << stage;
    // Summed in another order than the engine's, fp32 may differ in the last bit.
    for (std::size_t p = 0; p < expected.size(); ++p)
      for (std::size_t i = 0; i < expected[p].size(); ++i)
        for (const Values& rank : run.partition_as_whole) {
          if (!std::isnan(rank[p][i])) {
            EXPECT_NEAR(rank[p][i], expected[p][i], 1e-6 * (1.0 + std::abs(expected[p][i]))) << "stage " << stage;
          }
        }
  }
}

TEST(ZeroGradAccumDtype, StageZeroOneRankAndOffloadStayFp32AndAThirdDtypeIsRefused) {
  auto partition_dtype = [](int world, int stage, const OffloadOptions& offload, GradientReduction reduction) {
    DType dtype = DType::kF64;
    std::mutex mutex;
    distributed::run_inprocess_ranks(world, 30s, [&](distributed::Communicator& comm) {
      Model model;
      Probe optimizer(model.parameters(), OptimizerConfig{}, comm, stage, kBucket, offload, reduction);
      std::lock_guard<std::mutex> lock(mutex);
      dtype = optimizer.gradients().dtype();
    });
    return dtype;
  };
  EXPECT_EQ(partition_dtype(kWorld, 2, {}, {}), DType::kBF16);
  EXPECT_EQ(partition_dtype(kWorld, 2, {}, {.accumulation = DType::kBF16}), DType::kBF16);
  EXPECT_EQ(partition_dtype(kWorld, 0, {}, {}), DType::kF32);
  EXPECT_EQ(partition_dtype(1, 2, {}, {}), DType::kF32);
  EXPECT_EQ(partition_dtype(1, 1, {}, {}), DType::kF32);
  EXPECT_EQ(partition_dtype(kWorld, 2, {.enabled = true, .threads = 2}, {}), DType::kF32);
  EXPECT_EQ(partition_dtype(kWorld, 1, {.enabled = true, .threads = 2}, {}), DType::kF32);
  std::string error;
  distributed::run_inprocess_ranks(1, 30s, [&](distributed::Communicator& comm) {
    Model model;
    error = testing::error_of([&] {
      Probe optimizer(model.parameters(), OptimizerConfig{}, comm, 2, kBucket, {}, {.accumulation = DType::kF16});
    });
  });
  EXPECT_NE(error.find("grad_accum_dtype float16 is neither fp32 nor the working dtype, bfloat16"), std::string::npos)
      << error;
  EXPECT_NE(error.find("write \"fp32\" or \"bfloat16\""), std::string::npos) << error;
}

}  // namespace
}  // namespace zt::train
