// --stage dpo's objective on the tiny Qwen2 on the CPU: the gradient of the whole chain (body,
// fused head, preference loss) against finite differences for every loss type, the LoRA
// reference by switching the adapter off against a separate frozen reference, and the
// trainer's loop over pairs: rewards/accuracies rises, TRL's keys are logged, and a resumed
// run ends where the uninterrupted one does.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "autograd/grad_mode.h"
#include "distributed/communicators/inprocess_communicator.h"
#include "models/batch.h"
#include "models/init.h"
#include "models/peft/lora.h"
#include "models/weights/weights.h"
#include "tests/common/gradcheck.h"
#include "tests/common/process_test_util.h"
#include "tests/common/tiny_trainer_model.h"
#include "tests/common/train_log_test_util.h"
#include "train/checkpoint/checkpoint.h"
#include "train/preference/preference_objective.h"
#include "train/trainer.h"
#include "train/zero/zero3_frozen_copy.h"

namespace zt::train {
namespace {
namespace fs = std::filesystem;

// Two pairs packed [c0, r0, c1, r1].
models::PackedBatch pair_batch() {
  return models::pack_sequences(
      {{3, 7, 13, 11, 30}, {3, 7, 5, 2}, {9, 1, 4, 4, 8, 6}, {9, 1, 20, 21}},
      {{-100, 13, 11, 30, 4}, {-100, 5, 2, 1}, {-100, -100, -100, 8, 6, 2}, {-100, 20, 21, 3}});
}

PreferenceOptions options_for(PreferenceLossType type) {
  PreferenceOptions o{.loss = type, .beta = 0.5};
  if (type == PreferenceLossType::kSigmoid) o.label_smoothing = 0.1;
  if (type == PreferenceLossType::kSimpo) o.beta = 2.0;
  return o;
}

PreferenceReference reference_for(const PreferenceOptions& o, std::shared_ptr<const models::CausalLM> copy) {
  if (!uses_reference(o)) return {};
  return {.kind = PreferenceReference::Kind::kFrozenCopy, .copy = std::move(copy)};
}

TEST(PreferenceObjective, GradientOfTheWholeChainMatchesFiniteDifferencesForEveryLoss) {
  auto reference = std::make_shared<const models::CausalLM>(testing::random_tiny_model(4));
  const models::PackedBatch batch = pair_batch();
  for (auto type : {PreferenceLossType::kSigmoid, PreferenceLossType::kHinge, PreferenceLossType::kIpo,
                    PreferenceLossType::kKtoPair, PreferenceLossType::kOrpo, PreferenceLossType::kSimpo}) {
    SCOPED_TRACE(preference_loss_name(type));
    models::CausalLM policy = testing::random_tiny_model(6);
    PreferenceOptions options = options_for(type);
    options.ftx = 0.3;
    PreferenceObjective objective(options, reference_for(options, reference));
    auto loss = [&] {
      autograd::NoGradGuard no_grad;
      return objective.forward(policy, batch, 2, 1.0).loss_sum;
    };
    const PreferenceStep step = objective.forward(policy, batch, 2, 1.0);
    EXPECT_NEAR(step.loss_sum, loss(), 1e-10);
    step.surrogate.backward();
    EXPECT_GT(testing::expect_parameter_gradients_match(policy, {"lm_head", "layers.0.self_attn.q_proj"}, 4, loss), 5);
  }
}

TEST(PreferenceObjective, LoraReferenceByDisablingTheAdapterEqualsASeparateFrozenReference) {
  const models::PackedBatch batch = pair_batch();
  auto base = std::make_shared<const models::CausalLM>(testing::random_tiny_model(8));
  models::CausalLM policy = testing::random_tiny_model(8);
  models::attach_lora(
      policy,
      {.rank = 2, .alpha = 4.0, .target_modules = {"q_proj", "v_proj", "up_proj"}, .base_model_name_or_path = {}}, 3);
  for (const models::LayerLora& layer : policy.lora())
    for (const auto& update : layer)
      if (update)
        Tensor(update->b.data()).copy_from(Tensor::normal(update->b.data().shape(), 5, 0, 0.0, 0.4, DType::kF64));
  std::vector<autograd::Variable> adapters;
  for (const models::LayerLora& layer : policy.lora())
    for (const auto& update : layer)
      if (update) adapters.insert(adapters.end(), {update->a, update->b});
  auto run = [&](PreferenceReference reference) {
    for (const auto& v : adapters) v.zero_grad();
    PreferenceObjective objective({.beta = 0.1}, std::move(reference));
    const PreferenceStep step = objective.forward(policy, batch, 2, 1.0);
    step.surrogate.backward();
    std::vector<std::vector<double>> grads;
    for (const auto& v : adapters) grads.push_back(v.grad().to_vector());
    nlohmann::json entry;
    objective.log_metrics(entry, [](double value, const char*) { return value; });
    return std::make_tuple(step.loss_sum, grads, entry);
  };
  const auto [off_loss, off_grads, off_log] = run({.kind = PreferenceReference::Kind::kAdaptersOff});
  const auto [copy_loss, copy_grads, copy_log] = run({.kind = PreferenceReference::Kind::kFrozenCopy, .copy = base});
  EXPECT_EQ(off_loss, copy_loss);
  EXPECT_EQ(off_grads, copy_grads);
  EXPECT_EQ(off_log, copy_log);
  EXPECT_NE(off_log["rewards/chosen"].get<double>(), 0.0);  // the adapter moved the policy off the reference
  for (const char* key : {"rewards/chosen", "rewards/rejected", "rewards/accuracies", "rewards/margins", "logps/chosen",
                          "logps/rejected", "logits/chosen", "logits/rejected"})
    EXPECT_TRUE(off_log.contains(key)) << key;
}

// Pairs whose chosen answer continues the prompt's pattern and whose rejected one does not.
std::vector<TokenizedSample> pair_samples(int pairs) {
  std::vector<TokenizedSample> out;
  for (int p = 0; p < pairs; ++p) {
    const std::int32_t start = p % 16;
    TokenizedSample chosen, rejected;
    for (int i = 0; i < 3; ++i) {
      chosen.ids.push_back(start + i);
      chosen.labels.push_back(kIgnoreIndex);
    }
    rejected = chosen;
    for (int i = 0; i < 3 + p % 2; ++i) {
      chosen.ids.push_back(start + 3 + i);
      chosen.labels.push_back(start + 3 + i);
      rejected.ids.push_back((start * 7 + i * 5 + 11) % 32);
      rejected.labels.push_back((start * 7 + i * 5 + 11) % 32);
    }
    out.push_back(chosen);
    out.push_back(rejected);
  }
  return out;
}

class PreferenceTrainerRun : public testing::FolderTest {
 protected:
  TrainingArguments arguments(std::vector<std::string> extra) {
    extra.insert(extra.begin(), {"--stage", "dpo", "--learning_rate", "1e-2", "--logging_steps", "2",
                                 "--per_device_train_batch_size", "2", "--pref_beta", "0.5"});
    return testing::tiny_trainer_arguments(dir_, extra);
  }

  std::pair<std::shared_ptr<models::CausalLM>, TrainerState> run(const TrainingArguments& args,
                                                                 distributed::Communicator* comm = nullptr,
                                                                 bool precomputed = false) {
    auto model = std::make_shared<models::CausalLM>(testing::random_tiny_model(7, DType::kF32));
    const int world = comm ? comm->world_size() : 1;
    TrainingPlan plan = plan_training(
        args, [&](std::int64_t micro) { return ((8 + micro - 1) / micro + world - 1) / world; }, world);
    // Under ZeRO-3 the frozen reference is partitioned like the policy, as training_job makes it.
    std::shared_ptr<const models::CausalLM> reference =
        comm && plan.zero.stage == 3
            ? partition_frozen_copy(testing::random_tiny_model(7, DType::kF32), *comm, plan.zero)
            : std::make_shared<const models::CausalLM>(testing::random_tiny_model(7, DType::kF32));
    EXPECT_EQ(reference->parameter_gatherer() != nullptr, comm && plan.zero.stage == 3);
    TrainerModel trained = testing::train_every_parameter(model);
    PreferenceOptions options{.beta = args.pref_beta};
    trained.preference = std::make_shared<PreferenceObjective>(
        options, precomputed
                     ? PreferenceReference{.kind = PreferenceReference::Kind::kInitialPolicy, .precomputed = true}
                     : PreferenceReference{.kind = PreferenceReference::Kind::kFrozenCopy, .copy = reference});
    TrainerData data{pair_samples(8), pair_samples(3)};
    Trainer trainer(trained, std::move(data), plan, comm);
    TrainerState state = trainer.train();
    return {model, state};
  }
};

TEST_F(PreferenceTrainerRun, RewardAccuracyRisesAndTrlKeysAreLogged) {
  const auto [model, state] = run(arguments({"--max_steps", "24"}));
  const std::vector<double> accuracies = testing::logged_values(dir_, "rewards/accuracies");
  const std::vector<double> margins = testing::logged_values(dir_, "rewards/margins");
  ASSERT_GE(accuracies.size(), 10u);
  EXPECT_GT(accuracies.back(), 0.9);
  EXPECT_GT(margins.back(), margins.front());
  const nlohmann::json& first = state.log_history.front();
  for (const char* key : {"loss", "rewards/chosen", "rewards/rejected", "rewards/margins", "logps/chosen",
                          "logps/rejected", "logits/chosen", "logits/rejected", "grad_norm", "learning_rate"})
    EXPECT_TRUE(first.contains(key)) << key;
  // The reference is the initial model: the first step's rewards are zero before any update.
  EXPECT_NEAR(first["loss"].get<double>(), std::log(2.0), 0.2);
}

// Evaluation scores the evaluation pairs as training does, without gradients: eval_loss and
// TRL's keys prefixed eval_, the first (on start) equal to the loss of the initial model.
TEST_F(PreferenceTrainerRun, EvaluationLogsEvalLossAndTrlKeysWithTheEvalPrefix) {
  const auto [model, state] =
      run(arguments({"--max_steps", "8", "--validation_file", "y", "--eval_strategy", "steps", "--eval_steps", "4",
                     "--eval_on_start", "--per_device_eval_batch_size", "2"}));
  std::vector<nlohmann::json> evaluations;
  for (const nlohmann::json& entry : state.log_history)
    if (entry.contains("eval_loss")) evaluations.push_back(entry);
  ASSERT_EQ(evaluations.size(), 3u);  // on start, steps 4 and 8
  for (const char* key :
       {"eval_rewards/chosen", "eval_rewards/rejected", "eval_rewards/accuracies", "eval_rewards/margins",
        "eval_logps/chosen", "eval_logps/rejected", "eval_logits/chosen", "eval_logits/rejected"})
    EXPECT_TRUE(evaluations.back().contains(key)) << key;
  // The reference is the initial model: on start every reward is 0 and the loss is log 2.
  EXPECT_NEAR(evaluations.front()["eval_loss"].get<double>(), std::log(2.0), 1e-4);
  EXPECT_EQ(evaluations.front()["eval_rewards/chosen"].get<double>(), 0.0);
  EXPECT_LT(evaluations.back()["eval_loss"].get<double>(), evaluations.front()["eval_loss"].get<double>());
  EXPECT_EQ(evaluations.back()["step"], 8);
}

TEST_F(PreferenceTrainerRun, ResumingContinuesExactlyAsTheUninterruptedRun) {
  const auto [straight, straight_state] = run(arguments({"--max_steps", "8"}));
  fs::remove_all(dir_);
  run(arguments({"--max_steps", "8", "--save_strategy", "steps", "--save_steps", "3"}));
  const auto [resumed, resumed_state] =
      run(arguments({"--max_steps", "8", "--resume_from_checkpoint", (dir_ / "checkpoint-6").string()}));
  EXPECT_EQ(resumed_state.global_step, 8);
  for (std::size_t i = 0; i < straight->named_parameters().size(); ++i)
    EXPECT_EQ(straight->named_parameters()[i].variable.data().to_vector(),
              resumed->named_parameters()[i].variable.data().to_vector())
        << straight->named_parameters()[i].name;
}

// precompute_ref_log_probs: the initial policy scored once before the first step trains as the
// frozen copy does, and a resumed run takes the table from its checkpoint (the policy is no
// longer the reference then).
TEST_F(PreferenceTrainerRun, PrecomputedReferenceTrainsAsTheFrozenCopyAndResumes) {
  const auto [copy, copy_state] = run(arguments({"--max_steps", "6"}));
  fs::remove_all(dir_);
  const auto [precomputed, precomputed_state] = run(arguments({"--max_steps", "6"}), nullptr, true);
  for (std::size_t i = 0; i < copy->named_parameters().size(); ++i) {
    const std::vector<double> a = copy->named_parameters()[i].variable.data().to_vector();
    const std::vector<double> b = precomputed->named_parameters()[i].variable.data().to_vector();
    for (std::size_t k = 0; k < a.size(); ++k) ASSERT_NEAR(a[k], b[k], 1e-6) << i;
  }
  fs::remove_all(dir_);
  run(arguments({"--max_steps", "6", "--save_strategy", "steps", "--save_steps", "3"}), nullptr, true);
  const nlohmann::json saved = load_checkpoint((dir_ / "checkpoint-3").string()).run_state;
  ASSERT_TRUE(saved.contains("reference_log_probs"));
  EXPECT_EQ(saved["reference_log_probs"]["train"].size(), 16u);  // 8 pairs
  const auto [resumed, resumed_state] =
      run(arguments({"--max_steps", "6", "--resume_from_checkpoint", (dir_ / "checkpoint-3").string()}), nullptr, true);
  for (std::size_t i = 0; i < resumed->named_parameters().size(); ++i)
    EXPECT_EQ(resumed->named_parameters()[i].variable.data().to_vector(),
              precomputed->named_parameters()[i].variable.data().to_vector())
        << i;
}

// Two ranks of micro-batches of 2 pairs against one device accumulating two such micro-batches:
// the same pairs per step, so the same loss, metrics and weights up to float32 rounding, under
// every ZeRO stage (stage 3 gathers the head for both of its passes, and the frozen reference,
// partitioned like the policy, one module at a time; its weights stay partitioned, so its log
// is compared). Clipping off, as ZeRO sums the norm in another order.
TEST_F(PreferenceTrainerRun, ZeroStagesOnTwoRanksFollowTheSingleDevice) {
  const std::vector<std::string> common = {"--max_steps",     "6", "--logging_steps", "1",
                                           "--max_grad_norm", "0", "--learning_rate", "3e-3"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), common.begin(), common.end());
    return arguments(extra);
  };
  const auto [single, single_state] = run(with({"--gradient_accumulation_steps", "2"}));
  std::vector<std::vector<double>> single_weights;
  for (const auto& p : single->named_parameters()) single_weights.push_back(p.variable.data().to_vector());
  fs::remove_all(dir_);
  for (int stage : {0, 1, 2, 3}) {
    const std::string what = "stage " + std::to_string(stage);
    const std::string ds = testing::write_zero_config("zt_preference_ds", stage);
    std::mutex mutex;
    TrainerState rank0;
    std::vector<std::vector<double>> rank0_weights;
    distributed::run_inprocess_ranks(2, std::chrono::seconds(60), [&](distributed::Communicator& comm) {
      auto [model, state] = run(with({"--deepspeed", ds}), &comm);
      std::vector<std::vector<double>> weights;
      if (stage != 3)
        for (const auto& p : model->named_parameters()) weights.push_back(p.variable.data().to_vector());
      std::lock_guard<std::mutex> lock(mutex);
      if (comm.rank() == 0) rank0 = state, rank0_weights = weights;
    });
    fs::remove(ds);
    ASSERT_EQ(rank0.global_step, 6) << what;
    for (std::size_t step = 0; step < 6; ++step)
      for (const char* key :
           {"loss", "rewards/chosen", "rewards/margins", "rewards/accuracies", "logps/rejected", "logits/chosen"})
        EXPECT_NEAR(rank0.log_history[step][key].get<double>(), single_state.log_history[step][key].get<double>(), 1e-4)
            << what << " step " << step + 1 << " " << key;
    for (std::size_t i = 0; i < rank0_weights.size(); ++i)
      for (std::size_t k = 0; k < single_weights[i].size(); ++k)
        ASSERT_NEAR(rank0_weights[i][k], single_weights[i][k], 1e-5) << what << " parameter " << i;
    fs::remove_all(dir_);
  }
}

}  // namespace
}  // namespace zt::train
