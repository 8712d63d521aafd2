// P-Tuning v2 checkpoints as THUDM's ChatGLM recipe writes them (save_pretrained with only
// the trainable parameters): config.json, the base model's config with `pre_seq_len` and
// `prefix_projection` added as ChatGLM's configuration_chatglm.py names them, beside
// model.safetensors holding the prefix encoder's tensors alone
// (transformer.prefix_encoder.embedding.weight, and with the projection
// transformer.prefix_encoder.trans.{0,2}.{weight,bias}). Qwen and GLM models use the same
// names. The tokenizer files travel along, so the folder can be used with its base model.
#pragma once

#include <memory>
#include <string>

#include "models/peft/prefix_encoder.h"

namespace zt::models {

inline constexpr const char* kPrefixConfigFile = "config.json";
inline constexpr const char* kPrefixWeightsFile = "model.safetensors";

// pre_seq_len and prefix_projection of `dir`'s config.json; an error naming the file when it
// is not a P-Tuning checkpoint (no pre_seq_len).
PrefixConfig read_prefix_config(const std::string& dir);

// Writes `dir` (created if missing): config.json, model.safetensors with the encoder's
// `parameters` (PrefixEncoder::named_parameters) in float32, the dtype ChatGLM's recipe keeps
// the prefix encoder in, and the tokenizer files of the model's folder.
void save_prefix_checkpoint(const CausalLM& model, const PrefixConfig& config,
                            const std::vector<NamedParameter>& parameters, const std::string& dir);

// Copies `dir`'s model.safetensors into the encoder's `parameters`, converting dtypes. Every
// missing, unexpected or wrongly shaped tensor is reported in one error, before anything is
// copied.
void load_prefix_weights(const std::vector<NamedParameter>& parameters, const std::string& dir);

// read_prefix_config, a PrefixEncoder on the model's device and dtype, load_prefix_weights,
// attach_prefix_encoder: the checkpoint of `dir` (--ptuning_checkpoint) on the model.
std::shared_ptr<PrefixEncoder> load_prefix_checkpoint(CausalLM& model, const std::string& dir);

}  // namespace zt::models
