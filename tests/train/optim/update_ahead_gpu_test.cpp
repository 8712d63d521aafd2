// train/optim/update_ahead.h on the GPU: the single-device optimizer's update run module by
// module on a stream of its own while the next forward runs gives the steps of the update run
// in place, bit for bit: each step's loss and the weights after the last. A model wide enough
// that the update and the forward overlap, with a tied embedding (read first, by the
// embedding) and an untied LM head (read last, by the loss), with and without gradient
// checkpointing (the layers then gathered through the recompute), two micro-batches a step.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autograd/functions.h"
#include "models/config/config.h"
#include "models/init.h"
#include "models/token_loss.h"
#include "tests/common/model_fixture_util.h"
#include "tests/common/test_util.h"
#include "train/optim/optimizer.h"

namespace zt::train {
namespace {

struct Trained {
  std::vector<double> losses;
  std::vector<std::vector<double>> weights;
};

models::ModelConfig wide_config(bool tied) {
  models::ModelConfig config = models::load_config(testing::fixture_dir("qwen2"));
  config.hidden_size = 512;
  config.intermediate_size = 1536;
  config.num_heads = 8;
  config.num_kv_heads = 2;
  config.head_dim = 64;
  config.num_layers = 4;
  config.tie_word_embeddings = tied;
  return config;
}

std::vector<TrainableParameter> every_parameter(const models::CausalLM& model) {
  std::vector<TrainableParameter> parameters;
  for (const models::NamedParameter& p : model.named_parameters())
    if (p.variable.requires_grad()) parameters.push_back({p.name, p.variable, decays(p.name, p.variable.data())});
  return parameters;
}

models::PackedBatch batch_of(std::int64_t micro, std::int64_t vocab) {
  std::vector<std::vector<std::int64_t>> sequences;
  for (std::int64_t s = 0; s < 3; ++s) {
    std::vector<std::int64_t> tokens;
    for (std::int64_t i = 0; i < 40 + 13 * s; ++i) tokens.push_back((micro * 71 + s * 131 + i * 17 + 3) % vocab);
    sequences.push_back(tokens);
  }
  return models::pack_sequences(sequences, models::next_token_labels(sequences), Device::cuda());
}

Trained train(const models::ModelConfig& config, bool checkpointing, bool ahead) {
  models::CausalLM model = models::init_model(
      config, 7, {.device = Device::cuda(), .dtype = DType::kBF16, .gradient_checkpointing = checkpointing});
  OptimizerConfig adam;
  adam.weight_decay = 0.1;
  Optimizer optimizer(every_parameter(model), adam);
  if (ahead) EXPECT_TRUE(optimizer.update_ahead_of_forward(model));
  Trained run;
  for (std::int64_t step = 1; step <= 4; ++step) {
    double loss = 0.0;
    for (std::int64_t micro = 0; micro < 2; ++micro) {
      autograd::Variable sum = models::summed_token_loss(model, batch_of(2 * step + micro, config.vocab_size), 0.01);
      optimizer.before_backward();
      autograd::scale(sum, 0.01).backward();
      loss += sum.data().to_vector().at(0);
    }
    run.losses.push_back(loss);
    optimizer.step(1e-3, 1.0, 1.0, step);
    optimizer.zero_grad();
  }
  optimizer.settle();
  for (const models::NamedParameter& p : model.named_parameters())
    run.weights.push_back(p.variable.data().to(Device::cpu(), DType::kF32).to_vector());
  return run;
}

TEST(UpdateAheadGpu, GivesTheInPlaceUpdatesSteps) {
  ZT_SKIP_WITHOUT_GPU();
  for (bool tied : {true, false})
    for (bool checkpointing : {false, true}) {
      const std::string name = std::string(tied ? "tied" : "untied") + (checkpointing ? ", checkpointed" : "");
      const models::ModelConfig config = wide_config(tied);
      const Trained in_place = train(config, checkpointing, false);
      const Trained ahead = train(config, checkpointing, true);
      EXPECT_EQ(ahead.losses, in_place.losses) << name;
      ASSERT_EQ(ahead.weights.size(), in_place.weights.size()) << name;
      for (std::size_t i = 0; i < ahead.weights.size(); ++i) EXPECT_EQ(ahead.weights[i], in_place.weights[i]) << name;
      EXPECT_NE(ahead.losses.front(), ahead.losses.back()) << name << ": the steps trained";
    }
}

}  // namespace
}  // namespace zt::train
