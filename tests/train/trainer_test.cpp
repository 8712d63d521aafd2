// The training loop end to end on a tiny random Qwen2 on the CPU: the loss falls, gradient
// accumulation equals a larger micro-batch and more ranks, a resumed run continues exactly
// where the uninterrupted one went (also on another number of ranks), logging, checkpoints and the final files follow
// HF, and the fused loss is the full-logit cross-entropy.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <set>

#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "distributed/communicators/inprocess_communicator.h"
#include "models/config/config.h"
#include "models/init.h"
#include "models/weights/weights.h"
#include "tests/common/op_test_util.h"
#include "tests/common/process_test_util.h"
#include "tests/common/tiny_trainer_model.h"
#include "tests/common/train_log_test_util.h"
#include "train/checkpoint/checkpoint.h"
#include "train/trainer.h"

namespace zt::train {
namespace {
namespace fs = std::filesystem;

models::ModelConfig tiny_config() { return testing::tiny_trainer_config(); }

// Sequences whose next token follows from the current one; the first two are the "prompt".
std::vector<TokenizedSample> samples(int count) { return testing::chained_samples(count, 6, 5, 5, 3); }

class TrainerRun : public testing::FolderTest {
 protected:
  TrainingArguments arguments(std::vector<std::string> extra) {
    extra.insert(extra.begin(), {"--learning_rate", "3e-3", "--logging_steps", "5"});
    return testing::tiny_trainer_arguments(dir_, extra);
  }

  // A trainer of a fresh model (seed 7).
  std::pair<std::shared_ptr<models::CausalLM>, std::unique_ptr<Trainer>> trainer(
      const TrainingArguments& args, int sample_count = 12, distributed::Communicator* comm = nullptr) {
    auto model = std::make_shared<models::CausalLM>(models::init_model(tiny_config(), 7));
    const TrainerModel trained = testing::train_every_parameter(model);
    TrainerData data{samples(sample_count), samples(4)};
    const std::size_t train_count = data.train.size();
    const std::int64_t world = comm ? comm->world_size() : 1;
    TrainingPlan plan = plan_training(
        args,
        [&](std::int64_t micro) {
          const auto batches = static_cast<std::int64_t>((train_count + micro - 1) / micro);
          return (batches + world - 1) / world;
        },
        static_cast<int>(world));
    return {model, std::make_unique<Trainer>(trained, std::move(data), plan, comm)};
  }

  // Trains a fresh model (seed 7) and returns it with the trainer's state.
  std::pair<std::shared_ptr<models::CausalLM>, TrainerState> run(const TrainingArguments& args, int sample_count = 12,
                                                                 distributed::Communicator* comm = nullptr) {
    auto [model, built] = trainer(args, sample_count, comm);
    TrainerState state = built->train();
    return {model, state};
  }
};

double first_logged_loss(const TrainerState& state) { return state.log_history.front()["loss"].get<double>(); }
double last_logged_loss(const TrainerState& state) {
  for (auto it = state.log_history.rbegin(); it != state.log_history.rend(); ++it)
    if (it->contains("loss")) return (*it)["loss"].get<double>();
  return NAN;
}

// DeepSpeed's wall_clock_breakdown: a line of phase times after every micro-batch and one
// after every optimizer step, on rank 0.
TEST_F(TrainerRun, WallClockBreakdownPrintsALinePerMicroBatchAndPerStep) {
  const std::filesystem::path ds = dir_ / "ds_wall_clock.json";
  std::ofstream(ds) << R"({"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
                           "wall_clock_breakdown": true})";
  const TrainingArguments args = arguments({"--max_steps", "3", "--per_device_train_batch_size", "2",
                                            "--gradient_accumulation_steps", "2", "--deepspeed", ds.string()});
  ::testing::internal::CaptureStderr();
  run(args);
  const std::string printed = ::testing::internal::GetCapturedStderr();
  const auto count = [&](const std::string& pattern) {
    const std::regex re(pattern);
    return std::distance(std::sregex_iterator(printed.begin(), printed.end(), re), std::sregex_iterator());
  };
  EXPECT_EQ(count("time \\(ms\\) \\| fwd_microstep: "), 6) << printed;  // 3 steps of 2 micro-batches
  EXPECT_EQ(count("time \\(ms\\) \\| fwd: "), 3) << printed;
}

// --profile_steps: steps 2 and 3 are timed per op family; one table in the log and
// output_dir/step_profile.json, whose families cover the step and name what the model runs.
TEST_F(TrainerRun, ProfileStepsReportsTheFamiliesOfTheChosenSteps) {
  ::testing::internal::CaptureStderr();
  run(arguments({"--max_steps", "5", "--per_device_train_batch_size", "2", "--profile_steps", "2"}));
  const std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(printed.find("step profile: steps 2-3 on cpu"), std::string::npos) << printed;
  EXPECT_EQ(printed.find("step profile: steps", printed.find("step profile: steps") + 1), std::string::npos);
  const nlohmann::json profile = nlohmann::json::parse(std::ifstream(dir_ / "step_profile.json"));
  EXPECT_EQ(profile["steps"], 2);
  EXPECT_EQ(profile["first_step"], 2);
  EXPECT_EQ(profile["last_step"], 3);
  std::set<std::string> names;
  double shares = 0.0, previous_ms = 1e30;
  for (const nlohmann::json& family : profile["families"]) {
    names.insert(family["name"].get<std::string>());
    shares += family["share"].get<double>();
    EXPECT_LE(family["ms_per_step"].get<double>(), previous_ms) << "largest first";
    previous_ms = family["ms_per_step"].get<double>();
  }
  EXPECT_NEAR(shares, 1.0, 1e-6);
  for (const char* family : {"gemm", "attention", "norm", "rope", "swiglu", "embedding", "loss_head", "elementwise",
                             "grad_accumulate", "grad_norm", "optimizer", "untracked"})
    EXPECT_TRUE(names.count(family)) << family << " missing from " << profile.dump();
  EXPECT_FALSE(names.count("other_ops")) << "an op of the model has no family: " << profile.dump();
  EXPECT_FALSE(names.count("collectives")) << "one rank runs no collective";
}

// Training that ends before the chosen steps do reports the steps it profiled.
TEST_F(TrainerRun, ProfileStepsReportsAtTheEndWhenTrainingStopsFirst) {
  ::testing::internal::CaptureStderr();
  run(arguments({"--max_steps", "3", "--per_device_train_batch_size", "2", "--profile_steps", "10"}));
  const std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(printed.find("step profile: steps 2-3 on cpu"), std::string::npos) << printed;
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(dir_ / "step_profile.json"))["steps"], 2);
}

// Two in-process ranks: each times its own steps, the collectives among them; rank 0 reports.
TEST_F(TrainerRun, ProfileStepsTimesCollectivesOfInProcessRanks) {
  const TrainingArguments args =
      arguments({"--max_steps", "3", "--per_device_train_batch_size", "2", "--profile_steps", "1"});
  distributed::run_inprocess_ranks(2, std::chrono::seconds(60), [&](distributed::Communicator& comm) {
    auto [model, built] = trainer(args, 12, &comm);
    built->train();
  });
  const nlohmann::json profile = nlohmann::json::parse(std::ifstream(dir_ / "step_profile.json"));
  bool collectives = false;
  for (const nlohmann::json& family : profile["families"]) collectives |= family["name"] == "collectives";
  EXPECT_TRUE(collectives) << profile.dump();
}

TEST_F(TrainerRun, LossFallsAndHfFilesAreWritten) {
  auto [model, state] = run(arguments({"--max_steps", "60", "--per_device_train_batch_size", "2", "--learning_rate",
                                       "1e-2", "--lr_scheduler_type", "constant"}));
  EXPECT_EQ(state.global_step, 60);
  EXPECT_LT(last_logged_loss(state), 0.6 * first_logged_loss(state));
  for (const char* file : {"config.json", "model.safetensors", "trainer_state.json"})
    EXPECT_TRUE(fs::exists(dir_ / file)) << file;
  const nlohmann::json& entry = state.log_history.front();
  for (const char* key : {"loss", "grad_norm", "learning_rate", "epoch", "step"})
    EXPECT_TRUE(entry.contains(key)) << key;
  EXPECT_TRUE(state.log_history.back().contains("train_runtime"));
}

TEST_F(TrainerRun, AccumulationEqualsALargerMicroBatch) {
  auto [a, state_a] =
      run(arguments({"--max_steps", "3", "--per_device_train_batch_size", "4", "--weight_decay", "0.01"}));
  fs::remove_all(dir_);
  auto [b, state_b] = run(arguments({"--max_steps", "3", "--per_device_train_batch_size", "1",
                                     "--gradient_accumulation_steps", "4", "--weight_decay", "0.01"}));
  for (std::size_t i = 0; i < a->named_parameters().size(); ++i) {
    const Tensor& x = a->named_parameters()[i].variable.data();
    const Tensor& y = b->named_parameters()[i].variable.data();
    EXPECT_LE(max_abs_diff(x, y), 1e-5) << a->named_parameters()[i].name;
  }
}

// HF Trainer hands a DeepSpeed optimizer block every trainable parameter as one group, so its
// weight decay reaches the norm weights that the Trainer's own AdamW leaves undecayed. After one
// step (the same gradients either way) a decayed weight is p0 - lr * decay * p0 apart.
TEST_F(TrainerRun, DeepSpeedOptimizerBlockDecaysNormWeightsAsWell) {
  const auto final_norm = [](const models::CausalLM& model) {
    for (const auto& parameter : model.named_parameters())
      if (parameter.name == "model.norm.weight") return parameter.variable.data().to_vector();
    ADD_FAILURE() << "the model has no model.norm.weight";
    return std::vector<double>{};
  };
  const auto final_norm_after_one_step = [&](const std::string& weight_decay, bool optimizer_block) {
    const fs::path ds = dir_ / ("ds_decay_" + weight_decay + (optimizer_block ? "_block.json" : ".json"));
    std::ofstream(ds) << (optimizer_block ? R"({"train_micro_batch_size_per_gpu": "auto",
                                                "optimizer": {"type": "AdamW", "params": {"lr": "auto",
                                                "weight_decay": "auto"}}})"
                                          : R"({"train_micro_batch_size_per_gpu": "auto"})");
    auto [model, state] = run(arguments({"--max_steps", "1", "--per_device_train_batch_size", "4", "--weight_decay",
                                         weight_decay, "--deepspeed", ds.string()}));
    return final_norm(*model);
  };
  const std::vector<double> initial = final_norm(models::init_model(tiny_config(), 7));
  const std::vector<double> undecayed = final_norm_after_one_step("0", true);
  const std::vector<double> decayed = final_norm_after_one_step("0.5", true);
  const std::vector<double> trainer_grouped = final_norm_after_one_step("0.5", false);
  EXPECT_EQ(trainer_grouped, undecayed);  // the Trainer's AdamW leaves norm weights undecayed
  ASSERT_EQ(decayed.size(), initial.size());
  ASSERT_EQ(undecayed.size(), initial.size());
  const double learning_rate = 3e-3, weight_decay = 0.5;
  for (std::size_t i = 0; i < decayed.size(); ++i)
    EXPECT_NEAR(decayed[i], undecayed[i] - learning_rate * weight_decay * initial[i], 1e-6) << i;
}

TEST_F(TrainerRun, ResumingContinuesExactlyAsTheUninterruptedRun) {
  auto [straight, straight_state] = run(arguments({"--max_steps", "12", "--per_device_train_batch_size", "3"}));
  fs::remove_all(dir_);
  run(arguments({"--max_steps", "12", "--per_device_train_batch_size", "3", "--save_strategy", "steps", "--save_steps",
                 "5", "--save_total_limit", "1"}));
  ASSERT_EQ(list_checkpoints(dir_.string()).size(), 1u);  // checkpoint-5 rotated away by checkpoint-10
  EXPECT_TRUE(fs::exists(dir_ / "checkpoint-10" / "optimizer_index.json"));
  EXPECT_TRUE(fs::exists(dir_ / "checkpoint-10" / "optimizer" / "rank-00000-of-00001.safetensors"));
  auto [resumed, resumed_state] =
      run(arguments({"--max_steps", "12", "--per_device_train_batch_size", "3", "--resume_from_checkpoint", "true"}));
  EXPECT_EQ(resumed_state.global_step, 12);
  for (std::size_t i = 0; i < straight->named_parameters().size(); ++i)
    EXPECT_EQ(straight->named_parameters()[i].variable.data().to_vector(),
              resumed->named_parameters()[i].variable.data().to_vector())
        << straight->named_parameters()[i].name;
}

std::vector<Tensor> weights_of(const models::CausalLM& model) {
  std::vector<Tensor> weights;
  for (const auto& parameter : model.named_parameters()) weights.push_back(parameter.variable.data().clone());
  return weights;
}

void expect_same_weights(const std::vector<Tensor>& a, const std::vector<Tensor>& b, double tolerance,
                         const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_LE(relative_error(a[i], b[i]), tolerance) << what << " parameter " << i;
}

// Two ranks on micro-batches of 2, against one device on the same global batch of 4. With
// accumulation 2 the device sums the gradients of the very micro-batches the ranks run, so
// losses and weights agree to float32 rounding; clipping is off, as its norm is summed in
// another order under ZeRO and Adam would amplify that. As one micro-batch of 4, step 1 sees
// equal gradients up to rounding and later steps agree to Adam's amplification of it. 13
// samples: each epoch ends in a global batch of one sample, where rank 1 makes a filler pass.
TEST_F(TrainerRun, ZeroOnTwoRanksFollowsTheSingleDeviceRunOnTheGlobalBatch) {
  const std::vector<std::string> steps = {"--max_steps", "8", "--logging_steps", "1", "--max_grad_norm", "0"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), steps.begin(), steps.end());
    return arguments(extra);
  };
  auto [single, single_state] = run(with({"--per_device_train_batch_size", "4"}), 13);
  fs::remove_all(dir_);
  auto [accumulated, accumulated_state] =
      run(with({"--per_device_train_batch_size", "2", "--gradient_accumulation_steps", "2"}), 13);
  fs::remove_all(dir_);
  for (int stage : {0, 1, 2}) {
    const std::string ds = testing::write_zero_config("zt_trainer_ds", stage);
    std::mutex mutex;
    TrainerState rank0;
    std::vector<Tensor> rank0_weights;
    distributed::run_inprocess_ranks(2, std::chrono::seconds(30), [&](distributed::Communicator& comm) {
      auto [model, state] = run(with({"--per_device_train_batch_size", "2", "--deepspeed", ds}), 13, &comm);
      std::lock_guard<std::mutex> lock(mutex);
      if (comm.rank() == 0) rank0 = state, rank0_weights = weights_of(*model);
    });
    fs::remove(ds);
    const std::string what = "stage " + std::to_string(stage);
    ASSERT_EQ(rank0.global_step, 8);
    EXPECT_NEAR(rank0.log_history[0]["grad_norm"].get<double>(), single_state.log_history[0]["grad_norm"].get<double>(),
                1e-6)
        << what;
    for (int step = 0; step < 8; ++step) {
      const nlohmann::json& expected = accumulated_state.log_history[step];
      const nlohmann::json& got = rank0.log_history[step];
      EXPECT_NEAR(got["loss"].get<double>(), single_state.log_history[step]["loss"].get<double>(), 2e-3)
          << what << " step " << step + 1;
      EXPECT_EQ(got["loss"], expected["loss"]) << what << " step " << step + 1;
      EXPECT_NEAR(got["grad_norm"].get<double>(), expected["grad_norm"].get<double>(),
                  1e-6 * expected["grad_norm"].get<double>())
          << what << " step " << step + 1;
    }
    const double train_loss = accumulated_state.log_history.back()["train_loss"].get<double>();
    EXPECT_NEAR(rank0.log_history.back()["train_loss"].get<double>(), train_loss, 1e-6 * train_loss) << what;
    expect_same_weights(rank0_weights, weights_of(*accumulated), 1e-6, what);
  }
}

// The data position is stored in samples, so a checkpoint of two ranks resumes on one device
// with twice the accumulation (the same global batch), and the run ends where the
// uninterrupted two-rank run did. Checkpoint 3 is mid-epoch, before the epoch's short last
// global batch. Clipping is off for the reason given above.
TEST_F(TrainerRun, ACheckpointFromTwoRanksResumesOnOneWithTwiceTheAccumulation) {
  const std::string ds = testing::write_zero_config("zt_trainer_ds", 1);
  std::mutex mutex;
  std::vector<Tensor> straight;
  distributed::run_inprocess_ranks(2, std::chrono::seconds(30), [&](distributed::Communicator& comm) {
    auto [model, state] = run(arguments({"--max_steps", "8", "--per_device_train_batch_size", "2", "--max_grad_norm",
                                         "0", "--save_strategy", "steps", "--save_steps", "3", "--deepspeed", ds}),
                              13, &comm);
    std::lock_guard<std::mutex> lock(mutex);
    if (comm.rank() == 0) straight = weights_of(*model);
  });
  fs::remove(ds);
  const nlohmann::json position = load_checkpoint((dir_ / "checkpoint-3").string()).run_state;
  EXPECT_EQ(position["samples_in_epoch"], 12);
  EXPECT_FALSE(position.contains("batch_in_epoch"));
  auto [resumed, state] = run(
      arguments({"--max_steps", "8", "--per_device_train_batch_size", "2", "--max_grad_norm", "0",
                 "--gradient_accumulation_steps", "2", "--resume_from_checkpoint", (dir_ / "checkpoint-3").string()}),
      13);
  EXPECT_EQ(state.global_step, 8);
  expect_same_weights(weights_of(*resumed), straight, 1e-6, "resumed on one device");
}

// Checkpoints written before the position was stored in samples count micro-batches per rank.
TEST_F(TrainerRun, ACheckpointThatCountsMicroBatchesStillResumes) {
  const std::vector<std::string> args = {"--max_steps", "5", "--per_device_train_batch_size", "2"};
  auto [straight, straight_state] = run(arguments(args));
  fs::remove_all(dir_);
  std::vector<std::string> saving = args;
  saving.insert(saving.end(), {"--save_strategy", "steps", "--save_steps", "2"});
  run(arguments(saving));
  const fs::path state_file = dir_ / "checkpoint-2" / "zerotune_state.json";
  nlohmann::json run_state = nlohmann::json::parse(std::ifstream(state_file));
  ASSERT_EQ(run_state["samples_in_epoch"], 4);
  run_state.erase("samples_in_epoch");
  run_state["batch_in_epoch"] = 2;
  std::ofstream(state_file) << run_state.dump();
  std::vector<std::string> resuming = args;
  resuming.insert(resuming.end(), {"--resume_from_checkpoint", (dir_ / "checkpoint-2").string()});
  auto [resumed, resumed_state] = run(arguments(resuming));
  EXPECT_EQ(resumed_state.global_step, 5);
  expect_same_weights(weights_of(*resumed), weights_of(*straight), 0.0, "resumed from the older position");
}

TEST_F(TrainerRun, EvaluationIsLoggedAsHfDoes) {
  auto [model, state] =
      run(arguments({"--max_steps", "6", "--eval_strategy", "steps", "--eval_steps", "3", "--validation_file", "v"}));
  int evals = 0;
  for (const auto& entry : state.log_history) evals += entry.contains("eval_loss");
  EXPECT_EQ(evals, 2);
}

// reduce_lr_on_plateau, stepped with each evaluation's eval_loss as HF's Trainer steps it. An
// absolute threshold of 100 makes every evaluation after the first a bad one, so with patience
// 0 each halves the rate the next step trains at; a run resumed from step 3 continues from the
// plateau's saved state.
TEST_F(TrainerRun, ReduceLrOnPlateauHalvesTheRateAfterEachBadEvaluationAndResumes) {
  const std::vector<std::string> plateau = {
      "--max_steps",           "6",
      "--logging_steps",       "1",
      "--eval_strategy",       "steps",
      "--eval_steps",          "1",
      "--validation_file",     "v",
      "--lr_scheduler_type",   "reduce_lr_on_plateau",
      "--lr_scheduler_kwargs", R"({"factor": 0.5, "patience": 0, "threshold": 100,
                                                                        "threshold_mode": "abs"})"};
  const auto rates = [](const TrainerState& state) {
    std::vector<double> out;
    for (const auto& entry : state.log_history)
      if (entry.contains("learning_rate")) out.push_back(entry["learning_rate"].get<double>());
    return out;
  };
  std::vector<std::string> saving = plateau;
  saving.insert(saving.end(), {"--save_strategy", "steps", "--save_steps", "3"});
  auto [model, state] = run(arguments(saving));
  const std::vector<double> straight = rates(state);
  ASSERT_EQ(straight.size(), 6u);
  const double expected[] = {3e-3, 3e-3, 1.5e-3, 7.5e-4, 3.75e-4, 1.875e-4};
  for (std::size_t i = 0; i < 6; ++i) EXPECT_DOUBLE_EQ(straight[i], expected[i]) << "step " << i + 1;
  const nlohmann::json run_state = nlohmann::json::parse(std::ifstream(dir_ / "checkpoint-3" / "zerotune_state.json"));
  EXPECT_EQ(run_state["lr_plateau"]["evaluations"], 3) << run_state.dump();

  std::vector<std::string> resuming = plateau;
  resuming.insert(resuming.end(), {"--resume_from_checkpoint", (dir_ / "checkpoint-3").string()});
  auto [again, resumed] = run(arguments(resuming));
  const std::vector<double> continued = rates(resumed);
  ASSERT_EQ(continued.size(), 6u);
  for (std::size_t i = 3; i < 6; ++i) EXPECT_DOUBLE_EQ(continued[i], expected[i]) << "resumed step " << i + 1;
}

TEST_F(TrainerRun, EveryLogEntryGoesToTheJsonlFileAndTheCurvesAreDrawn) {
  auto [model, state] = run(arguments({"--max_steps", "6", "--logging_steps", "2", "--eval_strategy", "steps",
                                       "--eval_steps", "3", "--validation_file", "v"}));
  const std::vector<nlohmann::json> lines = testing::train_log_entries(dir_);
  ASSERT_EQ(lines.size(), state.log_history.size());
  for (std::size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(lines[i], state.log_history[i]) << "entry " << i;
  const nlohmann::json& first = state.log_history.front();
  EXPECT_GT(first["tokens_per_second"].get<double>(), 0.0);
  // On the CPU there is no peak to divide by and no device allocator to read.
  for (const char* key : {"mfu", "memory_allocated_gib", "memory_peak_gib", "loss_scale", "skipped_steps"})
    EXPECT_FALSE(first.contains(key)) << key;
  EXPECT_TRUE(fs::exists(dir_ / "training_loss.png"));
  EXPECT_TRUE(fs::exists(dir_ / "training_lr.png"));
}

TEST_F(TrainerRun, AResumedRunAppendsToTheJsonlFileWithoutRepeatingSteps) {
  run(arguments({"--max_steps", "7", "--logging_steps", "1", "--save_strategy", "steps", "--save_steps", "4"}));
  auto [model, resumed] = run(arguments(
      {"--max_steps", "7", "--logging_steps", "1", "--resume_from_checkpoint", (dir_ / "checkpoint-4").string()}));
  // Steps 5-7 and the summary of the first run were dropped and logged again by the second.
  const std::vector<nlohmann::json> lines = testing::train_log_entries(dir_);
  ASSERT_EQ(lines.size(), resumed.log_history.size());
  for (std::size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(lines[i], resumed.log_history[i]) << "entry " << i;
  EXPECT_EQ(lines.size(), 8u);  // 7 steps and the summary
}

TEST_F(TrainerRun, Fp16LogsTheLossScaleAndCountsSkippedSteps) {
  // A scale far beyond float32's range overflows the gradients until it has been halved enough
  // (hysteresis 1: at every overflow).
  const fs::path ds = fs::temp_directory_path() / "zt_trainer_fp16.json";
  std::ofstream(ds)
      << R"({"train_micro_batch_size_per_gpu": "auto", "fp16": {"enabled": "auto", "initial_scale_power": 140, "hysteresis": 1}})";
  auto [model, state] =
      run(arguments({"--max_steps", "30", "--logging_steps", "1", "--fp16", "--deepspeed", ds.string()}));
  fs::remove(ds);
  std::int64_t previous = 0;
  for (const nlohmann::json& entry : state.log_history) {
    if (!entry.contains("loss")) continue;
    ASSERT_TRUE(entry.contains("loss_scale"));
    const auto skipped = entry["skipped_steps"].get<std::int64_t>();
    EXPECT_GE(skipped, previous);
    EXPECT_LE(skipped, entry["step"].get<std::int64_t>());
    previous = skipped;
  }
  EXPECT_GT(previous, 0);
  EXPECT_LT(state.log_history[state.log_history.size() - 2]["loss_scale"].get<double>(), std::ldexp(1.0, 140));
}

// The trainer's fused LM head + loss gives what the full [tokens, vocab] logits give.
TEST_F(TrainerRun, EvaluationLossIsTheFullLogitCrossEntropy) {
  auto [model, built] = trainer(arguments({"--max_steps", "1", "--per_device_eval_batch_size", "64"}));
  const std::vector<TokenizedSample> eval = samples(4);
  const PackedBatch batch = pack(eval, {0, 1, 2, 3});
  auto as_tensor = [](const std::vector<std::int32_t>& v, DType dtype = DType::kI64) {
    return Tensor::from_values(std::vector<double>(v.begin(), v.end()), {static_cast<std::int64_t>(v.size())}, dtype);
  };
  autograd::NoGradGuard no_grad;
  autograd::Variable logits =
      model->forward(as_tensor(batch.input_ids), as_tensor(batch.positions), as_tensor(batch.cu_seqlens, DType::kI32));
  const double full = autograd::cross_entropy(logits, as_tensor(batch.labels),
                                              {.reduction = ops::Reduction::kSum, .ignore_index = kIgnoreIndex})
                          .data()
                          .to_vector()
                          .at(0) /
                      static_cast<double>(batch.label_tokens);
  EXPECT_NEAR(built->evaluate(), full, 1e-5 * full);
}

}  // namespace
}  // namespace zt::train
