// Checkpoints as HF Trainer lays them out: `output_dir/checkpoint-{step}/` with the model (or
// adapter) files, `trainer_state.json` (HF's fields), the optimizer state stored per
// parameter name in `optimizer.safetensors` (so a run resumes on any number of GPUs and any
// ZeRO stage), and `zerotune_state.json` (scheduler step, loss scaler, data position, RNG).
// A checkpoint is built in a hidden temporary folder and renamed into place, so a crash
// mid-save leaves the previous checkpoints intact and never a half-written one.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tensor/tensor.h"

namespace zt::train {

struct CheckpointContents {
  std::function<void(const std::string& directory)> write_model;  // model or adapter files
  std::map<std::string, Tensor> optimizer_state;                 // empty with --save_only_model
  nlohmann::json trainer_state;
  nlohmann::json run_state;
  nlohmann::json training_args;
};

// Writes `output_dir/checkpoint-{step}` atomically (replacing one of that step) and returns
// its path.
std::string save_checkpoint(const std::string& output_dir, std::int64_t step, const CheckpointContents& contents);

// The `checkpoint-N` folders of output_dir that are complete, by ascending N.
std::vector<std::string> list_checkpoints(const std::string& output_dir);

// Deletes the oldest checkpoints beyond `limit`, never `keep` (the best one).
void rotate_checkpoints(const std::string& output_dir, std::int64_t limit, const std::string& keep = "");

// --resume_from_checkpoint: "true" means the latest checkpoint in output_dir (an error if
// there is none), anything else a checkpoint folder that must exist.
std::string resolve_resume_checkpoint(const std::string& argument, const std::string& output_dir);

struct LoadedCheckpoint {
  std::string directory;
  nlohmann::json trainer_state;
  nlohmann::json run_state;
  std::map<std::string, Tensor> optimizer_state;  // empty when saved without it
};

LoadedCheckpoint load_checkpoint(const std::string& directory);

// The model weights of a checkpoint folder for models::load_weights: its index when sharded,
// else model.safetensors (the folder also holds optimizer.safetensors).
std::string model_weights_path(const std::string& directory);

}  // namespace zt::train
