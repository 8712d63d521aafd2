// Training against PyTorch, the oracle: tests/data/training/qwen2_adamw.json (written by
// scripts/make_training_reference.py) holds 10 optimizer steps of packed micro-batches for
// the tiny Qwen2 fixture, the hyper-parameters, and the loss, gradient norm and learning rate
// torch.optim.AdamW under HF's schedule gave at each step in float32 on the CPU. The same
// steps are replayed here the way the trainer runs them: the hyper-parameters go through
// zerotune train's flags into the training plan, each micro-batch through forward_hidden and
// the fused LM head + summed cross-entropy scaled by the step's label tokens, then one
// optimizer step.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "autograd/functions.h"
#include "models/config/config.h"
#include "models/weights/weights.h"
#include "train/args/training_plan.h"
#include "train/data/batching.h"
#include "train/finetuning.h"
#include "train/optim/lr_scheduler.h"
#include "train/optim/optimizer.h"

namespace zt::train {
namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

const fs::path kReference = fs::path(ZT_SOURCE_DIR) / "tests/data/training/qwen2_adamw.json";
constexpr double kTolerance = 1e-4;  // relative, on losses and gradient norms

// The hyper-parameters as zerotune train flags, with the placeholders the plan does not read.
TrainingArguments arguments_of(const ordered_json& hyper_parameters) {
  std::vector<std::string> flags = {"--model_name_or_path", "fixture", "--output_dir",      "unused",
                                    "--train_file",         "unused",  "--finetuning_type", "full"};
  for (const auto& [name, value] : hyper_parameters.items()) {
    flags.push_back("--" + name);
    flags.push_back(value.is_string() ? value.get<std::string>() : value.dump());
  }
  return parse_training_arguments(flags);
}

Tensor index_tensor(const ordered_json& values, DType dtype) {
  std::vector<double> as_double = values.get<std::vector<double>>();
  return Tensor::from_values(as_double, {static_cast<std::int64_t>(as_double.size())}, dtype);
}

std::int64_t label_tokens(const ordered_json& micro_batch) {
  std::int64_t count = 0;
  for (const auto& label : micro_batch.at("labels")) count += label.get<std::int64_t>() != kIgnoreIndex;
  return count;
}

// Forward and backward of one micro-batch as the trainer runs it (the fused LM head and
// cross-entropy, its gradients formed in the forward at the backward's scale); returns the
// summed token loss.
double forward_backward(const models::CausalLM& model, const ordered_json& micro_batch, double loss_factor) {
  autograd::Variable hidden = model.forward_hidden(index_tensor(micro_batch.at("input_ids"), DType::kI64),
                                                   index_tensor(micro_batch.at("positions"), DType::kI64),
                                                   index_tensor(micro_batch.at("cu_seqlens"), DType::kI32));
  const ops::LinearCrossEntropyOptions options{
      .reduction = ops::Reduction::kSum, .ignore_index = kIgnoreIndex, .grad_scale = static_cast<float>(loss_factor)};
  autograd::Variable loss_sum = autograd::linear_cross_entropy(
      hidden, model.lm_head_weight(), index_tensor(micro_batch.at("labels"), DType::kI64), options);
  autograd::scale(loss_sum, loss_factor).backward();
  return loss_sum.data().item();
}

double relative_difference(double value, double expected) {
  return std::abs(value - expected) / std::max(std::abs(expected), 1e-12);
}

TEST(TrainReference, AdamWStepsMatchPyTorch) {
  ASSERT_TRUE(fs::is_regular_file(kReference))
      << "no " << kReference.string() << ": run scripts/make_training_reference.py (needs torch and transformers) "
      << "to write the PyTorch reference, and commit it";
  const ordered_json reference = models::read_json_file(kReference.string());
  const ordered_json& steps = reference.at("steps");
  const TrainingArguments args = arguments_of(reference.at("hyper_parameters"));
  const auto micro_batches = static_cast<std::int64_t>(steps.size()) * args.gradient_accumulation_steps;
  const TrainingPlan plan = plan_training(args, [&](std::int64_t) { return micro_batches; });
  ASSERT_EQ(plan.max_steps, static_cast<std::int64_t>(steps.size())) << "max_steps vs the steps in the reference";
  ASSERT_EQ(plan.precision, Precision::kFloat32);

  models::CausalLM model = models::load_model(
      (fs::path(ZT_SOURCE_DIR) / reference.at("model").get<std::string>()).string(), {Device::cpu(), DType::kF32});
  Optimizer optimizer(select_trainable(model, args), plan.optimizer);
  LrSchedule schedule(plan.schedule);
  for (std::size_t s = 0; s < steps.size(); ++s) {
    const ordered_json& window = steps.at(s).at("micro_batches");
    ASSERT_EQ(static_cast<std::int64_t>(window.size()), plan.accumulation) << "micro-batches of step " << s + 1;
    std::int64_t tokens = 0;
    for (const auto& micro_batch : window) tokens += label_tokens(micro_batch);
    const double normaliser = std::max<double>(1.0, static_cast<double>(tokens));
    double loss_sum = 0.0;
    for (const auto& micro_batch : window) loss_sum += forward_backward(model, micro_batch, 1.0 / normaliser);
    const double lr = schedule.rate(static_cast<std::int64_t>(s));
    StepResult result = optimizer.step(lr, 1.0, plan.max_grad_norm, static_cast<std::int64_t>(s) + 1);
    optimizer.zero_grad();
    ASSERT_FALSE(result.skipped) << "step " << s + 1;

    const double expected_lr = reference.at("learning_rates").at(s).get<double>();
    EXPECT_NEAR(lr, expected_lr, 1e-9 * expected_lr + 1e-15) << "learning rate of step " << s + 1;
    const double loss = loss_sum / normaliser, expected_loss = reference.at("losses").at(s).get<double>();
    EXPECT_LE(relative_difference(loss, expected_loss), kTolerance)
        << "step " << s + 1 << ": loss " << loss << " vs PyTorch's " << expected_loss;
    const double expected_norm = reference.at("grad_norms").at(s).get<double>();
    EXPECT_LE(relative_difference(result.grad_norm, expected_norm), kTolerance)
        << "step " << s + 1 << ": grad_norm " << result.grad_norm << " vs PyTorch's " << expected_norm;
  }
}

}  // namespace
}  // namespace zt::train
