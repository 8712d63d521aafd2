// The parameters of each architecture under the names and shapes its checkpoints use, so a
// model loads, saves, and is addressed by optimizers and adapters with the names users see
// in Hugging Face folders (model.layers.3.self_attn.q_proj.weight,
// transformer.encoder.layers.3.self_attention.query_key_value.weight, ...).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "models/config/config.h"
#include "tensor/tensor.h"

namespace zt::models {

// How random initialisation fills a parameter (transformers' _init_weights).
enum class ParamKind { kMatrix, kEmbedding, kNorm, kBias };

struct ParamSpec {
  std::string name;
  Shape shape;
  ParamKind kind = ParamKind::kMatrix;
};

// The parameters a decoder layer may have; an architecture uses a subset.
enum LayerSlot : int {
  kInputNorm,
  kQkv,
  kQkvBias,  // fused [q; k; v] (ChatGLM)
  kQ,
  kQBias,
  kK,
  kKBias,
  kV,
  kVBias,
  kO,
  kOBias,
  kQNorm,
  kKNorm,              // Qwen3
  kPostSelfAttnNorm,   // glm4: after attention, before the residual
  kPostAttentionNorm,  // before the MLP
  kGateUp,
  kGateUpBias,  // fused [gate; up] (GLM)
  kGate,
  kUp,
  kDown,
  kDownBias,
  kPostMlpNorm,  // glm4: after the MLP, before the residual
  kLayerSlotCount
};

using LayerSpecs = std::array<std::optional<ParamSpec>, kLayerSlotCount>;

// The slots of the decoder's linear weights (attention q, k, v, o and the MLP's gate, up, down,
// or their fused forms): what bitsandbytes quantizes (models/quant/).
inline constexpr int kLinearSlots[] = {kQkv, kQ, kK, kV, kO, kGateUp, kGate, kUp, kDown};

struct ParameterLayout {
  ParamSpec embedding;
  std::vector<LayerSpecs> layers;
  std::optional<ParamSpec> final_norm;
  std::optional<ParamSpec> lm_head;  // absent when tied to the embedding

  // Every parameter, embedding first, then layer by layer, final norm, LM head.
  std::vector<ParamSpec> all() const;
};

ParameterLayout parameter_layout(const ModelConfig& config);

// Tensors some checkpoints carry that are not parameters (RoPE frequency buffers such as
// transformer.rotary_pos_emb.inv_freq): loaded as they are and written back on save.
bool is_carried_buffer(const std::string& name);

// The LM head stored next to a tied embedding by some writers: the same values, ignored.
bool is_tied_head_copy(const ModelConfig& config, const std::string& name);

}  // namespace zt::models
