// What a resumed run changes from the run that saved its checkpoint, said once per changed
// setting: the batch geometry (per-device batch, gradient accumulation, world size, whose
// product is the global batch) and the length of training (max_steps, or the num_train_epochs
// it follows from). zerotune resumes at the sample where the checkpoint stopped and goes on
// counting steps from its global_step; HF Trainer instead skips the checkpoint's steps at the
// new batch size. Both re-derive the learning-rate schedule from the new max_steps and go on
// from the checkpoint's scheduler step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/checkpoint/trainer_state.h"

namespace zt::train {

struct RunGeometry {
  std::int64_t micro_batch = 1;   // per_device_train_batch_size, as resolved with the DeepSpeed config
  std::int64_t accumulation = 0;  // gradient_accumulation_steps; 0: not recorded (an older checkpoint)
  int world_size = 0;             // 0: not recorded (an older checkpoint)
  std::int64_t max_steps = 0;
  double num_train_epochs = 0.0;

  std::int64_t global_batch() const { return micro_batch * accumulation * world_size; }
};

struct ResumePoint {
  std::string checkpoint = {};  // the folder, as messages name it
  std::int64_t global_step = 0;
  std::int64_t epoch = 0;
  std::size_t samples_in_epoch = 0;  // of `epoch`, already trained on
};

// What the resumed run knows of itself beyond its geometry.
struct ResumedRun {
  RunGeometry geometry;
  bool max_steps_given = false;      // --max_steps (else max_steps follows from num_train_epochs)
  std::int64_t steps_per_epoch = 1;  // optimizer steps, at the new global batch
  std::int64_t warmup_steps = 0;     // of the new schedule
  double next_lr = 0.0;              // what the next update trains at under the new schedule
};

// The run a checkpoint was saved by: zerotune_state.json's batch geometry (older checkpoints
// record only trainer_state.json's per-device batch) and trainer_state.json's length.
RunGeometry saved_geometry(const TrainerState& state, const nlohmann::json& run_state);

// One message per setting that differs; none when the run resumes as it was trained.
std::vector<std::string> resume_change_notes(const RunGeometry& saved, const ResumePoint& point, const ResumedRun& now);

}  // namespace zt::train
