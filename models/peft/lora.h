// LoRA as PEFT applies it to a causal LM: beside each targeted projection W [out, in] of
// every decoder layer sit A [rank, in] and B [out, rank], and the layer computes
// W x + (alpha / rank) · B A dropout(x) (models/peft/adapters.h). A starts as PEFT's default
// (kaiming-uniform with a = sqrt(5), i.e. U(-1/sqrt(in), 1/sqrt(in))) and B at zero, so the
// adapted model equals the base model until B is trained. The matrices are named as PEFT
// saves them (base_model.model.<module>.lora_A.weight); models/peft/lora_files.h reads and
// writes them in PEFT's folder layout.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/model.h"
#include "models/peft/adapter_config.h"

namespace zt::models {

// The names of the decoder layers' linear modules (q_proj, k_proj, ... for transformers'
// layout; query_key_value, dense, dense_h_to_4h, dense_4h_to_h for THUDM's), in layer order.
std::vector<std::string> lora_module_names(const ModelConfig& config);

// --lora_target: comma-separated module names, or "all" (PEFT's "all-linear": every linear
// module of the decoder layers, never the LM head). A name that matches no module is a
// zt::UsageError listing the model's module names.
std::vector<std::string> parse_lora_target(const std::string& text, const ModelConfig& config);

// Puts fresh updates beside every targeted projection (replacing any LoRA already there),
// on the model's device in its dtype; A is drawn from the Philox stream of `seed`.
void attach_lora(CausalLM& model, const LoraConfig& config, std::uint64_t seed);

// The model's LoRA matrices under PEFT's names, layer by layer, each A before its B.
std::vector<NamedParameter> lora_parameters(const CausalLM& model);

// W += scale · B A for every update (computed in float32 and rounded once to the model's
// dtype), then removes the LoRA: the plain model computes what the adapted one did.
void merge_lora(CausalLM& model);

}  // namespace zt::models
