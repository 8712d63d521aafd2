// The trainer's checkpoints: what a save holds and how a resume restores it. Every rank takes
// part in both (train/checkpoint/checkpoint_ranks.h): each writes and reads only the optimizer state it
// holds.

#include <cmath>

#include "runtime/error.h"
#include "runtime/generator.h"
#include "runtime/log.h"
#include "runtime/usage_error.h"
#include "train/checkpoint/checkpoint_ranks.h"
#include "train/checkpoint/resume_changes.h"
#include "train/trainer.h"

namespace zt::train {
namespace {

// reduce_lr_on_plateau's state; the best is null before the first evaluation (JSON has no inf).
nlohmann::json plateau_json(const PlateauState& state) {
  return {{"best", std::isfinite(state.best) ? nlohmann::json(state.best) : nlohmann::json()},
          {"bad_evaluations", state.bad_evaluations},
          {"cooldown_counter", state.cooldown_counter},
          {"evaluations", state.evaluations},
          {"lr", state.lr}};
}

PlateauState plateau_from_json(const nlohmann::json& json, const PlateauState& fresh) {
  PlateauState state = fresh;
  if (!json.at("best").is_null()) state.best = json.at("best").get<double>();
  state.bad_evaluations = json.at("bad_evaluations").get<std::int64_t>();
  state.cooldown_counter = json.at("cooldown_counter").get<std::int64_t>();
  state.evaluations = json.at("evaluations").get<std::int64_t>();
  state.lr = json.at("lr").get<double>();
  return state;
}

// The fp16 loss scaler's state under the names of DeepSpeed's DynamicLossScaler.
nlohmann::json loss_scaler_json(const LossScalerState& state) {
  return {{"cur_scale", state.scale},
          {"cur_hysteresis", state.current_hysteresis},
          {"cur_iter", state.iteration},
          {"last_overflow_iter", state.last_overflow_iteration}};
}

LossScalerState loss_scaler_from_json(const nlohmann::json& json) {
  LossScalerState state;
  state.scale = json.at("cur_scale").get<double>();
  state.current_hysteresis = json.at("cur_hysteresis").get<int>();
  state.iteration = json.at("cur_iter").get<std::int64_t>();
  state.last_overflow_iteration = json.at("last_overflow_iter").get<std::int64_t>();
  return state;
}

}  // namespace

CheckpointRanks Trainer::checkpoint_ranks() const {
  return {
      .comm = comm_, .device = model_.model->device(), .zero_stage = choose_engine(plan_, comm_ != nullptr).zero_stage};
}

void Trainer::save_checkpoint_now() {
  CheckpointSave save;
  save.output_dir = plan_.output_dir;
  save.step = state_.global_step;
  save.contents.write_model = model_.save;
  save.contents.trainer_state = to_json(state_);
  const GeneratorState rng = default_generator().state();
  save.contents.run_state = {{"global_step", state_.global_step},
                             {"scheduler_step", scheduler_step_},
                             {"epoch", position_.epoch},
                             {"samples_in_epoch", samples_in_epoch()},
                             {"micro_batch", plan_.micro_batch},
                             {"gradient_accumulation_steps", plan_.accumulation},
                             {"world_size", world_size()},
                             {"loss_scaler", loss_scaler_json(scaler_.state())},
                             {"rng", {{"seed", rng.seed}, {"offset", rng.offset}}}};
  if (schedule_.on_plateau()) save.contents.run_state["lr_plateau"] = plateau_json(schedule_.plateau_state());
  // The reference was the initial model: a resumed run can no longer compute it.
  if (model_.preference && model_.preference->precomputes())
    save.contents.run_state["reference_log_probs"] = model_.preference->precomputed_json();
  save.contents.training_args = nlohmann::json::parse(plan_.arguments_json);
  if (plan_.save_optimizer) save.optimizer = optimizer_.get();
  save.optimizer_step = scheduler_step_;  // the updates applied: DeepSpeed does not count skipped steps
  save.on_main_rank_with_weights = [this](const std::function<void()>& write) { on_main_rank_with_weights(write); };
  const std::string path = save_checkpoint_on_ranks(checkpoint_ranks(), save);
  if (!is_main_rank()) return;
  last_checkpoint_ = path;
  progress_.clear();
  ZT_LOG(kInfo, "saved " << path);
  if (plan_.save_total_limit) rotate_checkpoints(plan_.output_dir, *plan_.save_total_limit);
}

namespace {

// A run resumes with the method it trained: the checkpoint's trained weights are a LoRA adapter,
// a prefix or the whole model, which another method would not find.
void require_same_method(const LoadedCheckpoint& checkpoint, const std::string& arguments_json) {
  const nlohmann::json& saved = checkpoint.training_args;
  if (!saved.is_object() || !saved.contains("finetuning_type") || !saved["finetuning_type"].is_string()) return;
  const std::string trained = saved["finetuning_type"],
                    asked = nlohmann::json::parse(arguments_json).value("finetuning_type", std::string());
  ZT_REQUIRE_USAGE(trained == asked, checkpoint.directory + " was trained with --finetuning_type " + trained +
                                         " but this run's is " + asked + ": add --finetuning_type " + trained +
                                         " to resume it");
}

}  // namespace

void Trainer::resume(const std::string& directory) {
  LoadedCheckpoint checkpoint = load_checkpoint(directory);
  require_same_method(checkpoint, plan_.arguments_json);
  // Checked before the weights load, so a damaged file fails the resume at once, by name.
  const TrainerState saved = trainer_state_from_json(checkpoint.trainer_state, directory + "/trainer_state.json");
  const nlohmann::json& run = checkpoint.run_state;
  optimizer_->load_weights(plan_.saves_only_trainable, [&] { model_.load(directory); });
  scheduler_step_ = run.at("scheduler_step").get<std::int64_t>();
  load_optimizer_state_on_ranks(checkpoint_ranks(), directory, *optimizer_, scheduler_step_);
  state_.log_history = saved.log_history;
  state_.num_input_tokens_seen = saved.num_input_tokens_seen;
  state_.global_step = run.at("global_step").get<std::int64_t>();
  restore_data_position(run);
  scaler_.restore(loss_scaler_from_json(run.at("loss_scaler")));
  // A checkpoint of a run on another schedule has none: the plateau starts afresh.
  if (schedule_.on_plateau() && run.contains("lr_plateau"))
    schedule_.restore_plateau_state(plateau_from_json(run["lr_plateau"], schedule_.plateau_state()));
  default_generator().set_state(
      {run.at("rng").at("seed").get<std::uint64_t>(), run.at("rng").at("offset").get<std::uint64_t>()});
  if (model_.preference && model_.preference->precomputes()) {
    ZT_REQUIRE(run.contains("reference_log_probs"),
               directory +
                   " holds no precomputed reference log-probabilities (reference_log_probs in its run "
                   "state): resume it without --precompute_ref_log_probs, as it was trained");
    model_.preference->load_precomputed(run["reference_log_probs"], data_.train.size(), data_.eval.size(), directory);
  }
  state_.epoch = epoch_progress();
  last_checkpoint_ = directory;
  ZT_LOG(kInfo, "resumed from " << directory << " at step " << state_.global_step);
  if (!is_main_rank()) return;
  const ResumePoint point{.checkpoint = directory,
                          .global_step = state_.global_step,
                          .epoch = position_.epoch,
                          .samples_in_epoch = samples_in_epoch()};
  for (const std::string& note : resume_change_notes(saved_geometry(saved, run), point, resumed_run()))
    ZT_LOG(kWarn, note);
}

ResumedRun Trainer::resumed_run() const {
  return {.geometry = {.micro_batch = plan_.micro_batch,
                       .accumulation = plan_.accumulation,
                       .world_size = world_size(),
                       .max_steps = plan_.max_steps,
                       .num_train_epochs = plan_.num_train_epochs},
          .max_steps_given = plan_.max_steps_given,
          .steps_per_epoch = plan_.steps_per_epoch,
          .warmup_steps = plan_.schedule.warmup_steps,
          .next_lr = schedule_.rate(scheduler_step_)};
}

}  // namespace zt::train
