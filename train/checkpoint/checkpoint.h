// Checkpoints as HF Trainer lays them out: `output_dir/checkpoint-{step}/` with the model (or
// adapter) files, `trainer_state.json` (HF's fields), the optimizer state stored per
// parameter name (`optimizer/` and `optimizer_index.json`, train/checkpoint/optimizer_state_files.h: a
// run resumes on any number of GPUs and any ZeRO stage), and `zerotune_state.json`
// (scheduler step, loss scaler, data position, RNG). A checkpoint is built in a hidden
// temporary folder and renamed into place, so a crash mid-save leaves the previous
// checkpoints intact and never a half-written one. With several ranks every rank writes its
// optimizer state into the hidden folder and the main rank completes it
// (train/checkpoint/checkpoint_ranks.h); this file is the main rank's part.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace zt::train {

struct CheckpointContents {
  std::function<void(const std::string& directory)> write_model;      // model or adapter files
  std::function<void(const std::string& directory)> write_optimizer;  // absent with --save_only_model
  nlohmann::json trainer_state;
  nlohmann::json run_state;
  nlohmann::json training_args;
};

// A save in progress: the hidden folder it is built in, and where it goes once complete.
struct PartialCheckpoint {
  std::string folder;        // output_dir/.checkpoint-{step}.partial
  std::string final_folder;  // output_dir/checkpoint-{step}
};

PartialCheckpoint partial_checkpoint(const std::string& output_dir, std::int64_t step);
// Creates the hidden folder empty (removing one a crash left).
void begin_checkpoint(const PartialCheckpoint& partial);
// Writes `contents` into the hidden folder (trainer_state.json last: it marks a folder
// complete), renames it into place, replacing a checkpoint of that step, and returns the
// final path. On failure the hidden folder is removed and the error rethrown.
std::string complete_checkpoint(const PartialCheckpoint& partial, const CheckpointContents& contents);
// Removes the hidden folder of a save that failed elsewhere (on another rank).
void abandon_checkpoint(const PartialCheckpoint& partial);

// One process: begin_checkpoint then complete_checkpoint. Returns the checkpoint's path.
std::string save_checkpoint(const std::string& output_dir, std::int64_t step, const CheckpointContents& contents);

// The `checkpoint-N` folders of output_dir that are complete, by ascending N.
std::vector<std::string> list_checkpoints(const std::string& output_dir);

// Deletes the oldest checkpoints beyond `limit`, never `keep` (the best one).
void rotate_checkpoints(const std::string& output_dir, std::int64_t limit, const std::string& keep = "");

// --resume_from_checkpoint: "true" means the latest checkpoint in output_dir (an error if
// there is none), anything else a checkpoint folder that must exist. Either must be one of
// zerotune's: one HF's Trainer wrote, or one without zerotune_state.json, is an error.
std::string resolve_resume_checkpoint(const std::string& argument, const std::string& output_dir);

// The JSON states of a checkpoint; its optimizer state is read with OptimizerStateFiles.
struct LoadedCheckpoint {
  std::string directory;
  nlohmann::json trainer_state;
  nlohmann::json run_state;
  nlohmann::json training_args;  // null where the folder has none (HF's checkpoints hold a .bin)
};

LoadedCheckpoint load_checkpoint(const std::string& directory);

// The model weights of a checkpoint folder for models::load_weights: its index when sharded,
// else model.safetensors (old checkpoints also hold optimizer.safetensors).
std::string model_weights_path(const std::string& directory);

}  // namespace zt::train
