// Saving and resuming checkpoints with every rank taking part (train/checkpoint/checkpoint.h is the main
// rank's folder handling, train/checkpoint/optimizer_state_files.h the optimizer state's layout).
//
// Saving, on every rank:
//   1. the main rank creates the hidden folder output_dir/.checkpoint-N.partial;
//   2. each rank writes the optimizer state it holds into it, all at once (under ZeRO stage 0
//      every rank holds the same state and only the main rank writes it);
//   3. the main rank writes the model files (under ZeRO-3 the weights are gathered module by
//      module into its host memory, never whole on a GPU), the optimizer index, the JSON
//      states, and renames the folder into place.
// After each step the ranks agree, in one small all-reduce, on whether any of them failed;
// if one did, the save fails on every rank (the hidden folder is removed) instead of the
// others waiting in their next collective, and every rank's error is the first failed
// rank's, which is broadcast to the others.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "distributed/communicator.h"
#include "train/checkpoint/checkpoint.h"
#include "train/optim/optimizer.h"

namespace zt::train {

struct CheckpointRanks {
  distributed::Communicator* comm = nullptr;  // null: one process
  Device device = Device::cpu();              // where the communicator's tensors live
  int zero_stage = 0;                         // recorded in the optimizer index
};

struct CheckpointSave {
  std::string output_dir;
  std::int64_t step = 0;                       // global step: the folder is checkpoint-{step}
  CheckpointContents contents;                 // its write_optimizer is set here
  const OptimizerEngine* optimizer = nullptr;  // null: --save_only_model
  std::int64_t optimizer_step = 0;             // AdamW updates applied (skipped fp16 steps excluded)
  // Runs its argument on the main rank with the model weights readable (collective under
  // ZeRO-3); null: simply on the main rank.
  std::function<void(const std::function<void()>&)> on_main_rank_with_weights;
};

// Every rank calls it. Returns the checkpoint's path on the main rank, "" on the others.
std::string save_checkpoint_on_ranks(const CheckpointRanks& ranks, const CheckpointSave& save);

// Every rank calls it: reads the state its `optimizer` holds from the checkpoint folder
// (whatever world size and stage saved it), then the working weights take the masters.
// `optimizer_step` is the run state's count of updates, which an index must repeat.
void load_optimizer_state_on_ranks(const CheckpointRanks& ranks, const std::string& directory,
                                   OptimizerEngine& optimizer, std::int64_t optimizer_step);

}  // namespace zt::train
