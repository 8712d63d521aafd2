// --padding longest against the padding-free layout on a tiny random Qwen2 on the CPU: the
// pad tokens come after their sample's tokens, so the loss and every gradient are the same,
// and a trainer run reaches the same weights while counting the pad tokens it computed.
#include <gtest/gtest.h>

#include <filesystem>

#include "autograd/functions.h"
#include "models/config/config.h"
#include "models/init.h"
#include "tests/common/op_test_util.h"
#include "tests/common/process_test_util.h"
#include "tests/common/tiny_trainer_model.h"
#include "train/trainer.h"

namespace zt::train {
namespace {
namespace fs = std::filesystem;

constexpr BatchLayout kPadded{.pad_to_longest = true, .pad_id = 31};

models::ModelConfig tiny_config() { return testing::tiny_trainer_config(); }

// Samples of lengths 3 to 12 whose next token follows from the current one; the first two
// tokens are the prompt.
std::vector<TokenizedSample> samples(int count) {
  std::vector<TokenizedSample> out;
  for (int s = 0; s < count; ++s) {
    TokenizedSample sample;
    std::int32_t t = (7 * s) % 31;
    for (int i = 0; i < 3 + (5 * s) % 10; ++i) {
      sample.ids.push_back(t);
      sample.labels.push_back(i < 2 ? kIgnoreIndex : t);
      t = (5 * t + 3) % 31;
    }
    out.push_back(sample);
  }
  return out;
}

Tensor as_tensor(const std::vector<std::int32_t>& values, DType dtype) {
  return Tensor::from_values(std::vector<double>(values.begin(), values.end()),
                             {static_cast<std::int64_t>(values.size())}, dtype);
}

// The summed token loss of one micro-batch, after its backward.
double loss_and_backward(const models::CausalLM& model, const PackedBatch& batch) {
  autograd::Variable hidden =
      model.forward_hidden(as_tensor(batch.input_ids, DType::kI64), as_tensor(batch.positions, DType::kI64),
                           as_tensor(batch.cu_seqlens, DType::kI32));
  autograd::Variable loss =
      autograd::linear_cross_entropy(hidden, model.lm_head_weight(), as_tensor(batch.labels, DType::kI64),
                                     {.reduction = ops::Reduction::kSum, .ignore_index = kIgnoreIndex});
  loss.backward();
  return loss.data().to_vector().at(0);
}

TEST(Padding, LossAndGradientsEqualThePaddingFreeLayout) {
  const std::vector<TokenizedSample> data = samples(4);
  const std::vector<std::size_t> indices = {0, 1, 2, 3};
  const models::CausalLM packed_model = models::init_model(tiny_config(), 7);
  const models::CausalLM padded_model = models::init_model(tiny_config(), 7);
  const PackedBatch packed = pack(data, indices);
  const PackedBatch padded = pack(data, indices, kPadded);
  ASSERT_GT(padded.input_ids.size(), packed.input_ids.size());
  const double packed_loss = loss_and_backward(packed_model, packed);
  const double padded_loss = loss_and_backward(padded_model, padded);
  EXPECT_NEAR(padded_loss, packed_loss, 1e-6 * packed_loss);
  for (std::size_t i = 0; i < packed_model.named_parameters().size(); ++i) {
    const autograd::Variable& a = packed_model.named_parameters()[i].variable;
    const autograd::Variable& b = padded_model.named_parameters()[i].variable;
    EXPECT_LE(max_abs_diff(a.grad(), b.grad()), 1e-6) << packed_model.named_parameters()[i].name;
  }
}

class PaddedTraining : public testing::FolderTest {
 protected:
  // Two optimizer steps of four samples each on a fresh model (seed 7).
  std::pair<std::shared_ptr<models::CausalLM>, TrainerState> run(const BatchLayout& layout) {
    const TrainingArguments args =
        parse_training_arguments({"--model_name_or_path", "tiny", "--output_dir",
                                  (dir_ / (layout.pad_to_longest ? "padded" : "packed")).string(), "--train_file", "x",
                                  "--learning_rate", "3e-3", "--save_strategy", "no", "--finetuning_type", "full",
                                  "--max_length", "16", "--max_steps", "2", "--per_device_train_batch_size", "4"});
    auto model = std::make_shared<models::CausalLM>(models::init_model(tiny_config(), 7));
    TrainerModel trained;
    trained.model = model.get();
    for (const auto& [name, variable] : model->named_parameters())
      trained.trainable.push_back({name, variable, decays(name, variable.data())});
    trained.save = [](const std::string&) {};
    TrainerData data{samples(12), {}, layout};
    TrainingPlan plan = plan_training(
        args, [](std::int64_t micro) { return (12 + micro - 1) / micro; }, 1);
    Trainer trainer(trained, std::move(data), plan);
    return {model, trainer.train()};
  }
};

TEST_F(PaddedTraining, ReachesTheWeightsOfThePaddingFreeRunAndCountsPadTokensAsSeen) {
  auto [packed_model, packed_state] = run({});
  auto [padded_model, padded_state] = run(kPadded);
  for (std::size_t i = 0; i < packed_model->named_parameters().size(); ++i) {
    const Tensor& a = packed_model->named_parameters()[i].variable.data();
    const Tensor& b = padded_model->named_parameters()[i].variable.data();
    EXPECT_LE(max_abs_diff(a, b), 1e-6) << packed_model->named_parameters()[i].name;
  }
  EXPECT_EQ(padded_state.log_history.front()["loss"], packed_state.log_history.front()["loss"]);
  EXPECT_GT(padded_state.num_input_tokens_seen, packed_state.num_input_tokens_seen);
}

}  // namespace
}  // namespace zt::train
