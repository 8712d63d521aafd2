// PEFT's prefix tuning (peft_type "PREFIX_TUNING", P-Tuning v2 as PEFT implements it), read
// from the folder PeftModel.save_pretrained writes: adapter_config.json (num_virtual_tokens,
// num_layers, token_dim, num_attention_heads, ...) beside adapter_model.safetensors, whose
// one tensor `prompt_embeddings` is the prefix encoder's output table
// [num_virtual_tokens, num_layers · 2 · token_dim]; the projection MLP, if one was trained,
// is already applied. For models with grouped-query attention PEFT sets token_dim to
// kv_heads · head_dim and num_attention_heads to kv_heads, so each row reads as
// [layer][key, value][kv_head][head_dim], the split ChatGLM's P-Tuning uses.
//
// What differs from ChatGLM's P-Tuning is the positions: PEFT hands the table to transformers
// as a filled cache, and the model counts its tokens as already seen, so the first real token
// sits at position num_virtual_tokens (PrefixPositions::kAfterPrefix).
#pragma once

#include <string>
#include <vector>

#include "models/model.h"
#include "models/peft/adapter_config.h"

namespace zt::models {

inline constexpr const char* kPeftPrefixTensor = "prompt_embeddings";

// `dir`'s adapter_config.json; an error naming the file and the key when it is not a
// prefix-tuning adapter of a decoder-only model.
PeftPrefixConfig read_peft_prefix_config(const std::string& dir);

// Each layer's prefix [1, num_virtual_tokens, kv_heads, head_dim] in the model's dtype and
// device. A config or table that does not fit the model is one error naming the tensor or
// key, both shapes and the likely cause.
std::vector<PrefixKv> read_peft_prefix(const CausalLM& model, const std::string& dir);

// A source giving every sequence of a batch the same fixed `prefix` (one sequence's).
CausalLM::PrefixSource fixed_prefix_source(std::vector<PrefixKv> prefix);

// read_peft_prefix as the model's prefix source, with positions after the prefix. Returns
// the prefix length.
std::int64_t load_peft_prefix(CausalLM& model, const std::string& dir);

}  // namespace zt::models
