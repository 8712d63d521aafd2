// The optimizer state of a checkpoint on disk, per parameter name, written by every rank in
// parallel and read back by any number of ranks under any ZeRO stage (docs/TRAINING.md,
// Checkpoints, has the format for users):
//
//   checkpoint-N/optimizer/rank-00003-of-00008.safetensors
//       what rank 3 of 8 held: for each parameter with elements there, the float32 tensors
//       "<name>.master", "<name>.exp_avg" and "<name>.exp_avg_sq", 1-D, holding elements
//       [begin, end) of the flattened parameter; the file's metadata repeats the shapes and
//       ranges ("slices"), so the file describes itself. Padding is never stored.
//   checkpoint-N/optimizer_index.json
//       written by the main rank once every rank's file is complete: the AdamW step, and for
//       each parameter its whole shape and its slices in order, each naming the file and the
//       three tensors that hold it. The slices of a parameter cover it exactly once.
//
// A rank's slices are its OptimizerEngine::held_state(): ZeRO stages 1-3 hold flat, padded,
// uneven chunks, so a parameter may be split over several ranks; stage 0 and one device hold
// everything (one file). A reader opens only the files that hold what it asks for, through
// memory maps, so no rank ever holds more than its own state. Checkpoints from before this
// layout keep everything in one optimizer.safetensors with whole-shaped tensors; they are
// read as one slice per parameter.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tensor/safetensors/safetensors.h"
#include "train/checkpoint/optimizer_index.h"
#include "train/optim/optimizer.h"

namespace zt::train {

inline constexpr const char* kOptimizerIndexFile = "optimizer_index.json";
inline constexpr const char* kOptimizerFolder = "optimizer";
inline constexpr const char* kLegacyOptimizerFile = "optimizer.safetensors";

// "optimizer/rank-00003-of-00008.safetensors": a rank's file, relative to the checkpoint.
std::string state_file_name(int rank, int world_size);

// Writes `slices` into checkpoint_dir's state file of `rank` (atomically, tensor by tensor
// from wherever the slices live) and returns its path.
std::string write_state_slices(const std::string& checkpoint_dir, int rank, int world_size,
                               const std::vector<StateSlice>& slices);

struct StateIndexInfo {
  std::int64_t step = 0;  // AdamW updates applied so far (the bias correction's t)
  int world_size = 1;     // of the run that saved, for people reading the index
  int zero_stage = 0;
};

// The main rank, after every rank in `writers` wrote its file: reads their headers and writes
// optimizer_index.json. Fails, naming the file or parameter, when a file is missing or
// damaged or the slices do not cover each parameter exactly once.
void write_state_index(const std::string& checkpoint_dir, const std::vector<int>& writers, const StateIndexInfo& info);

class OptimizerStateFiles {
 public:
  // The state of checkpoint_dir through its index, or its old single optimizer.safetensors;
  // nullopt when it holds none (saved with --save_only_model). Checks the index, not yet the
  // rank files.
  static std::optional<OptimizerStateFiles> open(const std::string& checkpoint_dir);

  const std::string& source() const { return source_; }       // the index, or the old single file
  std::optional<std::int64_t> step() const { return step_; }  // absent in old checkpoints
  std::vector<std::string> names() const;
  bool contains(const std::string& name) const { return parameters_.count(name) != 0; }
  const Shape& shape(const std::string& name) const;

  // What is wrong with the files holding `name`'s state (missing file or tensor, wrong dtype
  // or size), naming the file; nullopt when they can be read.
  std::optional<std::string> damage(const std::string& name) const;
  // Fills the slice's views with elements [begin, end) of its parameter's state, reading only
  // the files that hold them. Fails naming the parameter and file.
  void read_into(const StateSlice& slice) const;
  // One parameter's whole float32 master weight: a view of the file when one slice holds it
  // all, else assembled from its slices.
  Tensor master(const std::string& name) const;

 private:
  using Piece = OptimizerStatePiece;
  using Entry = OptimizerStateEntry;
  static OptimizerStateFiles from_index(const std::string& checkpoint_dir);
  static OptimizerStateFiles from_legacy_file(const std::string& checkpoint_dir);
  const Entry& entry(const std::string& name) const;
  const SafetensorsFile& file(const std::string& relative) const;  // opened on first use
  Tensor piece_tensor(const std::string& name, const Piece& piece, const std::string& tensor) const;

  std::string dir_;
  std::string source_;
  std::optional<std::int64_t> step_;
  std::map<std::string, Entry> parameters_;
  mutable std::map<std::string, SafetensorsFile> files_;
};

}  // namespace zt::train
