// The training loop of `zerotune train` on one device: micro-batches accumulated into
// optimizer steps (the loss of a step is the mean over every label token of its window, as
// HF Trainer normalises with num_items_in_batch), fp16 loss scaling with skipped steps, the
// learning-rate schedule, logging (trainer_state.json's log_history, output_dir/train_log.jsonl,
// TensorBoard event files when asked for, a progress bar on a terminal, throughput and memory
// figures, loss-curve images at the end), evaluation, checkpoints and resuming from them. The loss is the fused LM head
// + cross-entropy, so the [tokens, vocab] logits are never held.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "distributed/communicator.h"
#include "models/model.h"
#include "runtime/terminal/progress_bar.h"
#include "train/args/training_plan.h"
#include "train/checkpoint/resume_changes.h"
#include "train/checkpoint/trainer_state.h"
#include "train/data/batching.h"
#include "train/optim/loss_scaler.h"
#include "train/optim/optimizer.h"
#include "train/preference/preference_objective.h"
#include "train/report/step_profile_report.h"
#include "train/report/tensorboard_log.h"
#include "train/report/train_log.h"
#include "train/report/train_metrics.h"
#include "train/report/wall_clock_breakdown.h"

namespace zt::train {

struct CheckpointRanks;

// What is trained, and how a checkpoint stores and restores it (the full model's files, or
// only an adapter's).
struct TrainerModel {
  models::CausalLM* model = nullptr;
  std::vector<TrainableParameter> trainable;
  std::function<void(const std::string& directory)> save;
  std::function<void(const std::string& directory)> load;
  // --stage dpo: the loss of preference pairs (the data is then pairs, chosen then rejected);
  // null: the token loss.
  std::shared_ptr<PreferenceObjective> preference{};
};

struct TrainerData {
  std::vector<TokenizedSample> train;
  std::vector<TokenizedSample> eval;
  BatchLayout layout = {};  // --padding
};

class Trainer {
 public:
  // With a communicator the run is data parallel under ZeRO (plan.zero.stage): each step's
  // global batch is dealt out to the ranks (deal_global_batch), and the loss is normalised
  // by the label tokens of the whole global batch. Every rank constructs and runs its own
  // Trainer.
  // The plan is all the Trainer reads of the run's settings.
  Trainer(TrainerModel model, TrainerData data, TrainingPlan plan, distributed::Communicator* communicator = nullptr);

  // Trains to plan.max_steps (resuming first when the arguments say so), saves the final
  // model and trainer_state.json into output_dir, and returns the final state. A stop signal
  // (runtime/stop_signals.h) ends it between steps instead, on every rank at the same step:
  // rank 0 says where and how to resume (train/report/interruption_report.h), nothing more is
  // saved, and stopped_by() names the signal.
  TrainerState train();
  // The signal that ended train() early; 0 when it ran to the end.
  int stopped_by() const { return stopped_by_; }
  // Mean token loss over the evaluation data, without gradients.
  double evaluate();

  const TrainerState& state() const { return state_; }
  const OptimizerEngine& optimizer() const { return *optimizer_; }

 private:
  // Where the data stands, the same on every rank and for every world size.
  struct Position {
    std::int64_t epoch = 0;
    std::size_t units = 0;  // of the epoch's units (epoch_units), those already trained on
  };

  double run_optimizer_step();
  double forward_backward(const PackedBatch& batch, double loss_factor);
  // What the loss is a mean over: a micro-batch's label tokens, or its preference pairs.
  std::int64_t loss_units(const PackedBatch& batch) const;
  // With wall_clock_breakdown, rank 0 prints the micro-batch's times (and the step's).
  void log_wall_clock(bool step_ended);
  std::vector<PackedBatch> next_window();
  void start_epoch(std::int64_t epoch);
  bool epoch_ended() const { return position_.units >= epoch_units_.size(); }
  std::size_t global_batch_units() const;
  std::size_t local_batch_count(std::size_t units) const;
  std::size_t samples_in_epoch() const;
  void restore_data_position(const nlohmann::json& run_state);
  int world_size() const { return comm_ ? comm_->world_size() : 1; }
  void maybe_log(double step_loss, const StepResult& result, double lr);
  void add_throughput(nlohmann::json& entry);
  void add_memory(nlohmann::json& entry) const;
  void add_offload(nlohmann::json& entry) const;
  void record(const nlohmann::json& entry);
  void step_plateau_schedule(double eval_loss);
  // An evaluation's log entry: eval_loss (and under --stage dpo TRL's eval_ keys).
  // The unrounded eval_loss goes to `eval_loss` when given.
  nlohmann::json evaluation_entry(double* eval_loss = nullptr);
  void maybe_evaluate_and_save(bool epoch_ended);
  // train/trainer_checkpoint.cpp
  CheckpointRanks checkpoint_ranks() const;
  void save_checkpoint_now();
  void resume(const std::string& directory);
  ResumedRun resumed_run() const;
  double epoch_progress() const;
  // `what` labels the all-reduce in --zero_trace.
  double sum_over_ranks(double value, const char* what) const;
  // A stop signal any rank received, agreed by all of them; 0 when none did.
  int stop_signal_of_any_rank() const;
  void report_interruption() const;
  bool is_main_rank() const { return comm_ == nullptr || comm_->rank() == 0; }
  void on_main_rank_with_weights(const std::function<void()>& write);

  TrainerModel model_;
  TrainerData data_;
  TrainingPlan plan_;
  distributed::Communicator* comm_;
  std::unique_ptr<OptimizerEngine> optimizer_;
  LossScaler scaler_;
  LrSchedule schedule_;
  TrainerState state_;
  Position position_;
  std::vector<BatchUnit> epoch_units_;
  std::int64_t scheduler_step_ = 0;  // DeepSpeed does not advance the schedule on a skipped step
  double loss_since_log_ = 0.0;
  std::int64_t steps_since_log_ = 0;
  double grad_norm_ = 0.0;
  double train_loss_sum_ = 0.0;
  FlopsModel flops_model_;
  std::optional<double> peak_flops_;                // per GPU; none on the CPU or an unknown GPU
  ThroughputWindow throughput_;                     // this rank's, since the last log entry
  std::unique_ptr<WallClockBreakdown> wall_clock_;  // with wall_clock_breakdown
  std::unique_ptr<StepProfileSession> profile_;     // with --profile_steps
  std::unique_ptr<TrainLogFile> log_file_;          // rank 0 only
  std::unique_ptr<TensorBoardLog> tensorboard_;     // rank 0 only, when a TensorBoard folder is asked for
  ProgressBar progress_{0, 0, false};
  std::string last_checkpoint_;  // saved or resumed from by this run
  int stopped_by_ = 0;
};

}  // namespace zt::train
