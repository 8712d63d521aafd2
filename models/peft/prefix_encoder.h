// P-Tuning v2 as THUDM's ChatGLM2/3 define it: `pre_seq_len` trained vectors become, in every
// layer, keys and values that each sequence attends to before its own tokens, while the
// model's own weights stay frozen. The encoder embeds the prefix positions 0..pre_seq_len-1
// into [pre_seq_len, layers · 2 · kv_heads · head_dim], optionally through a two-layer MLP
// (Linear(→ hidden_size) → tanh → Linear, `prefix_projection`), and reads each row as
// [layer][key, value][kv_head][head_dim]. The prefix keys are past keys: no RoPE is applied
// to them, and the real tokens' positions still start at 0 (model.h, generate.h).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "models/model.h"
#include "models/peft/adapters.h"
#include "runtime/generator.h"

namespace zt::models {

struct PrefixConfig {
  std::int64_t pre_seq_len = 16;
  bool prefix_projection = false;
  double dropout = 0.1;  // ChatGLM's nn.Dropout on the prefix, active only while training
};

class PrefixEncoder {
 public:
  // Zero-filled parameters for `model`'s layout, in dtype on device, named as ChatGLM's
  // checkpoints name them (transformer.prefix_encoder.embedding.weight, .trans.0.*, .trans.2.*).
  PrefixEncoder(const ModelConfig& model, PrefixConfig config, Device device, DType dtype);

  const PrefixConfig& config() const { return config_; }
  const std::vector<NamedParameter>& named_parameters() const { return parameters_; }
  std::int64_t num_parameters() const;
  // The width of one prefix row: layers · 2 · kv_heads · head_dim.
  std::int64_t width() const { return layers_ * 2 * kv_heads_ * head_dim_; }

  // torch's default initialisation of nn.Embedding (N(0, 1)) and nn.Linear (weight and bias
  // uniform in ±1/sqrt(in_features)), drawn from `generator`.
  void init_weights(Generator& generator);

  // Each layer's prefix for `sequences` sequences, [sequences, pre_seq_len, kv_heads,
  // head_dim] each. While recording gradients the dropout draws its own mask per sequence,
  // as ChatGLM's does on the batch-expanded prefix; the gradients sum over the sequences.
  std::vector<PrefixKv> forward(std::int64_t sequences) const;

 private:
  Variable add(const std::string& name, const Shape& shape, Device device, DType dtype);

  PrefixConfig config_;
  std::int64_t layers_, kv_heads_, head_dim_;
  std::vector<NamedParameter> parameters_;
  Variable embedding_, hidden_weight_, hidden_bias_, out_weight_, out_bias_;
};

// Makes every forward of `model` (training, evaluation and generate) attend to `encoder`'s
// prefix; the model keeps the encoder alive.
void attach_prefix_encoder(CausalLM& model, std::shared_ptr<const PrefixEncoder> encoder);

}  // namespace zt::models
