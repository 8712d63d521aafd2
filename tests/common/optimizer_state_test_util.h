// What the optimizer-state checkpoint tests share: a three-parameter model whose sizes split
// unevenly over any world size, an optimizer engine for it at any stage, a save of a
// checkpoint-5 holding only optimizer state, and the rewrite of a checkpoint's state in the
// old single-file form.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "autograd/functions.h"
#include "tests/common/op_test_util.h"
#include "train/checkpoint/checkpoint_ranks.h"
#include "train/checkpoint/optimizer_state_files.h"
#include "train/zero/zero_optimizer.h"

namespace zt::train::state_test {

using autograd::Variable;
using State = std::map<std::string, Tensor>;

// Three parameters whose sizes (15, 3, 7) split unevenly over any world size.
struct Model {
  Variable weight{zt::testing::random_tensor({3, 5}, 1, DType::kF32), true, "w"};
  Variable bias{zt::testing::random_tensor({3}, 2, DType::kF32), true, "b"};
  Variable scale{zt::testing::random_tensor({7}, 3, DType::kF32), true, "s"};
  std::vector<TrainableParameter> parameters() { return {{"w", weight, true}, {"b", bias, false}, {"s", scale, true}}; }
  void backward(int rank) {
    Variable y = autograd::linear(Variable(zt::testing::random_tensor({4, 5}, 100 + rank, DType::kF32)), weight, bias);
    autograd::add(autograd::sum(autograd::mul(y, y)), autograd::sum(autograd::mul(scale, scale))).backward();
  }
};

constexpr std::int64_t kBucket = 7;  // buckets of about 7 elements: parameters straddle chunks
constexpr std::int64_t kTotal = 15 + 3 + 7;

// An engine at `stage` on `comm` (the single-device optimizer when comm is null).
inline std::unique_ptr<OptimizerEngine> engine(Model& model, distributed::Communicator* comm, int stage) {
  if (comm == nullptr) return std::make_unique<Optimizer>(model.parameters(), OptimizerConfig{});
  return std::make_unique<ZeroOptimizer>(model.parameters(), OptimizerConfig{}, *comm, stage, kBucket);
}

inline std::string save(distributed::Communicator* comm, const OptimizerEngine& optimizer,
                        const std::filesystem::path& out, int stage) {
  CheckpointSave save;
  save.output_dir = out.string();
  save.step = 5;
  save.contents.trainer_state = {{"global_step", 5}};
  save.contents.run_state = {{"scheduler_step", 1}};
  save.contents.training_args = nlohmann::json::object();
  save.optimizer = &optimizer;
  save.optimizer_step = 1;
  return save_checkpoint_on_ranks({.comm = comm, .device = Device::cpu(), .zero_stage = stage}, save);
}

// Rewrites the optimizer state of `checkpoint` as checkpoints before the per-rank files kept
// it: one optimizer.safetensors with every tensor whole.
inline void to_single_optimizer_file(const std::filesystem::path& checkpoint) {
  const std::optional<OptimizerStateFiles> files = OptimizerStateFiles::open(checkpoint.string());
  ASSERT_TRUE(files.has_value()) << checkpoint;
  NamedTensors whole;
  for (const std::string& name : files->names()) {
    const Shape& shape = files->shape(name);
    Tensor master = Tensor::empty(shape, DType::kF32), exp_avg = Tensor::empty(shape, DType::kF32),
           exp_avg_sq = Tensor::empty(shape, DType::kF32);
    files->read_into({name, shape, 0, shape_numel(shape), master.flatten(), exp_avg.flatten(), exp_avg_sq.flatten()});
    whole.insert(whole.end(),
                 {{name + ".master", master}, {name + ".exp_avg", exp_avg}, {name + ".exp_avg_sq", exp_avg_sq}});
  }
  save_safetensors((checkpoint / kLegacyOptimizerFile).string(), whole);
  std::filesystem::remove(checkpoint / kOptimizerIndexFile);
  std::filesystem::remove_all(checkpoint / kOptimizerFolder);
}

}  // namespace zt::train::state_test
