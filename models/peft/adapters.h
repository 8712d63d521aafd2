// What parameter-efficient fine-tuning adds to a decoder layer while the layer's own
// weights stay as loaded: LoRA's low-rank update beside a projection (models/peft/lora.h) and
// P-Tuning v2's prefix keys and values in front of every sequence (models/peft/prefix_encoder.h).
// The plain model has neither; the decoder (models/decoder.h) applies whatever is set.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "autograd/variable.h"
#include "models/weights/hf_names.h"

namespace zt::models {

using autograd::Variable;

// y = W x (+ bias) + scale · B (A dropout(x)), as PEFT's LoRA Linear computes it.
struct LoraUpdate {
  Variable a;          // [rank, in_features]
  Variable b;          // [out_features, rank]
  double scale = 1.0;  // lora_alpha / rank
  double dropout = 0.0;
};

// A layer's LoRA updates by the slot of the weight each one sits beside (kQ, kQkv, ...).
using LayerLora = std::array<std::optional<LoraUpdate>, kLayerSlotCount>;

// Keys and values every sequence of a packed batch attends to before its own tokens:
// [sequences, prefix_len, kv_heads, head_dim] each.
struct PrefixKv {
  Variable keys;
  Variable values;
};

// Where the positions of a sequence's own tokens start behind a prefix. ChatGLM's P-Tuning v2
// counts them from 0: the prefix takes no positions. PEFT's prefix tuning hands the prefix to
// transformers as a filled cache, whose length the model counts as positions already seen,
// so the first token after it sits at the prefix length (models/peft/peft_prefix_files.h).
enum class PrefixPositions { kFromZero, kAfterPrefix };

// The position of the first token after a prefix of `prefix_length` tokens.
inline std::int64_t first_position_after(PrefixPositions positions, std::int64_t prefix_length) {
  return positions == PrefixPositions::kAfterPrefix ? prefix_length : 0;
}

// The Variables an adapter adds to one layer, in a fixed order (for activation
// checkpointing, which must know every input that needs a gradient).
std::vector<Variable> adapter_inputs(const LayerLora* lora, const PrefixKv* prefix);
// Rebuilds the LoRA and prefix of adapter_inputs' order around new Variables.
void rebind_adapter_inputs(const std::vector<Variable>& inputs, std::size_t first, LayerLora* lora, PrefixKv* prefix);

// x [tokens, in] -> the LoRA term [tokens, out], to be added to the base projection. Dropout
// applies only when `training`: a forward that backward will differentiate (which a
// checkpointed layer's first forward is, though it runs without recording).
Variable lora_delta(const Variable& x, const LoraUpdate& update, bool training);

}  // namespace zt::models
