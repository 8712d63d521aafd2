// A training checkpoint (train/checkpoint/checkpoint.h) written out as a Hugging Face folder, as
// DeepSpeed's zero_to_fp32 recovers a model from its optimizer state: by default every trained
// parameter comes from its float32 master weight in the checkpoint's optimizer state (the
// ranks' slices through optimizer_index.json, or an old checkpoint's optimizer.safetensors;
// train/checkpoint/optimizer_state_files.h), not the working copy, which may be bf16; every untrained
// one from the base model folder that training_args.json names, and config.json,
// generation_config.json and the tokenizer files from that base folder too.
//
// full / freeze: a model folder. The masters of a full run must cover every parameter; a freeze
// run's masters are the parameters it trained, the others are the base's.
// lora: the adapter folder (PEFT's layout) from the masters of A and B, or with merge_lora
// the base with W + scale · B A merged in float32 (models/peft/lora.h).
// ptuning: refused: the checkpoint's prefix encoder already is the exported form.
//
// Host memory: every file is read through memory maps and the output is written tensor by
// tensor (train/checkpoint/streamed_safetensors.h): each parameter is read (assembled from the ranks'
// slices when a ZeRO run split it), converted if asked and written before the next is read,
// so the export holds one parameter at a time whatever the model's size. A merged LoRA needs
// the base model in float32 (as `zerotune export --merge_lora` does).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "runtime/dtype.h"

namespace zt::train {

struct CheckpointExport {
  std::string checkpoint;  // an output_dir/checkpoint-N folder
  std::string output_dir;
  // Where the files are written when not output_dir itself: a staging folder the caller renames
  // to output_dir once the export is complete (cli/export_command.cpp).
  std::string write_dir = {};
  std::string base_model;          // empty: the model_name_or_path of the checkpoint's training_args.json
  std::string base_revision = {};  // a hub id's revision; empty: training_args.json's model_revision, else main
  bool working_weights = false;    // the checkpoint's model files instead of the float32 masters
  bool merge_lora = false;
  // Default: float32 for the masters (as zero_to_fp32 writes), the stored dtype for the
  // working weights (float32 for a merged LoRA).
  std::optional<DType> dtype = std::nullopt;
  std::size_t max_shard_bytes = 5'000'000'000;  // transformers' "5GB"
};

// Writes request.output_dir and returns a line saying what was exported. A checkpoint saved
// without optimizer state (--save_only_model) exports its model files, with a warning. Masters
// that do not match the parameters (missing, unexpected, wrongly shaped) are reported all
// together in one zt::Error before anything is written.
std::string export_checkpoint(const CheckpointExport& request);

}  // namespace zt::train
