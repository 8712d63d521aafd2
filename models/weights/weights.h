// Hugging Face model folders in and out: config.json + model.safetensors, or shards +
// model.safetensors.index.json, beside the tokenizer and generation_config.json files.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "models/model.h"

namespace zt::models {

// config.json, then every weight, converted to options.dtype on options.device.
CausalLM load_model(const std::string& model_dir, const ModelOptions& options = {});

// Copies the tensors of a checkpoint (a folder, an index or one .safetensors file) into the
// model's parameters, converting their dtype. A folder is read as transformers reads it: its
// model.safetensors.index.json or model.safetensors when there is one, so other .safetensors
// files beside them are not taken for weights. Every missing, unexpected or wrongly shaped
// tensor is reported by name, with both shapes, in one zt::Error, before anything is copied.
// RoPE buffers (hf_names.h) are kept for saving; a tied model's stored lm_head is ignored.
void load_weights(CausalLM& model, const std::string& path);

struct SaveOptions {
  std::size_t max_shard_bytes = 5'000'000'000;  // transformers' "5GB"
  std::optional<DType> dtype = std::nullopt;    // default: the model's dtype
};

// Writes `dir` (created if missing) in the layout the model was loaded from: its config.json
// as loaded, the weights as one model.safetensors or as shards of at most max_shard_bytes with
// an index, generation_config.json (the source's, else one from config.json's token ids),
// and the tokenizer and remote-code files of the source folder. Each file is written
// atomically (runtime/atomic_file.h), the index after its shards.
void save_model(const CausalLM& model, const std::string& dir, const SaveOptions& options = {});

// Copies the tokenizer, chat-template and remote-code files of the model folder `source`
// into `dir` (which must exist): what save_model writes beside the weights, and what an
// adapter folder carries so that it can be used on its own (HF Trainer saves the tokenizer
// with an adapter). Nothing is copied when `source` is empty or is `dir`.
void copy_companion_files(const std::string& source, const std::string& dir);

}  // namespace zt::models
