// A causal language model of any supported architecture (models/config/config.h): parameters are
// autograd leaves named as in the checkpoint, and the forward takes a packed batch in
// FlashAttention's varlen layout (every sequence's tokens back to back, positions restarting
// per sequence, cu_seqlens marking the starts), so no padding is ever computed.
// models/weights/weights.h loads and saves them, models/init.h fills them at random.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "autograd/variable.h"
#include "models/activation_dump.h"
#include "models/config/config.h"
#include "models/decoder.h"
#include "models/generation/kv_cache.h"
#include "models/parameter_gatherer.h"
#include "models/quant/quantized_weight.h"
#include "tensor/safetensors/safetensors.h"

namespace zt::models {

struct ModelOptions {
  Device device = Device::cpu();
  DType dtype = DType::kF32;            // parameters and activations; CUDA training uses bf16
  bool gradient_checkpointing = false;  // recompute each layer in backward (autograd/checkpoint.h)
  bool deterministic = true;            // the embedding's GPU backward sums in a fixed order
  // The attention backward's dQ summed per query tile in a fixed order instead of atomically
  // (HF's full_determinism): runs repeat bit for bit, at some speed (ops/attention/attention.h).
  bool deterministic_attention = false;
  ops::AttentionImpl attn_impl = ops::AttentionImpl::kZerotune;  // zerotune's kernels or cuDNN's
  // A bitsandbytes 4-bit checkpoint (config.bnb_4bit): keep its linear weights packed, each
  // layer's dequantized only while it computes (models/quant/), rather than dequantizing them
  // all at load.
  bool keep_4bit_weights = false;
  // A dense checkpoint: quantize its decoder linears to 4 bits as they are read (QLoRA's base,
  // models/quant/), so the dense weights never sit on the device.
  std::optional<quant::Quant4Options> quantize_base = std::nullopt;

  // Whether the decoder's linear weights arrive in 4 bits for a model of `config`: the
  // constructor then leaves them unallocated (the loader fills a QuantizedLinears instead).
  bool linears_in_4bit(const ModelConfig& config) const {
    return quantize_base.has_value() || (keep_4bit_weights && config.bnb_4bit);
  }
};

struct NamedParameter {
  std::string name;
  Variable variable;
};

// The parameters one module reads (models/parameter_gatherer.h): a layer's weights with its
// LoRA matrices, the embedding, the final norm, the untied LM head.
struct ModuleParameters {
  ModuleRef module;
  std::vector<NamedParameter> parameters;
};

class CausalLM {
 public:
  // Allocates every parameter (zeros) on options.device in options.dtype.
  CausalLM(ModelConfig config, ModelOptions options);

  const ModelConfig& config() const { return *config_; }
  const ModelOptions& options() const { return options_; }
  Device device() const { return options_.device; }
  DType dtype() const { return options_.dtype; }
  void set_gradient_checkpointing(bool enabled) { options_.gradient_checkpointing = enabled; }

  // Checkpoint order: embedding, layer by layer, final norm, LM head.
  const std::vector<NamedParameter>& named_parameters() const { return parameters_; }
  std::vector<Variable> parameters() const;
  bool has_parameter(const std::string& name) const { return index_.count(name) != 0; }
  // Throws zt::Error naming `name` and some of the real names when there is no such parameter.
  const Variable& parameter(const std::string& name) const;
  // Counted from the shapes at construction, so it holds while ZeRO-3 has the values partitioned.
  std::int64_t num_parameters() const { return num_parameters_; }
  void zero_grad() const;

  // ZeRO stage 3 (models/parameter_gatherer.h): with a gatherer set, every forward gathers
  // each module's parameters just before it computes and releases them right after, and a
  // decoder layer that records gradients runs as gathered_checkpoint (one recompute per
  // layer in backward). The gatherer must outlive every forward and backward that uses it.
  void set_parameter_gatherer(ParameterGatherer* gatherer) { gatherer_ = gatherer; }
  ParameterGatherer* parameter_gatherer() const { return gatherer_; }
  // A gatherer the model keeps alive itself (models/quant/: 4-bit base weights dequantized per
  // layer), shared by copies of the model; set as the model's gatherer.
  void own_parameter_gatherer(std::shared_ptr<ParameterGatherer> gatherer) {
    owned_gatherer_ = std::move(gatherer);
    gatherer_ = owned_gatherer_.get();
  }
  const std::shared_ptr<ParameterGatherer>& owned_parameter_gatherer() const { return owned_gatherer_; }
  // Activations by name (models/activation_dump.h): with a recorder set, every forward hands
  // it each point's output; it must outlive those forwards. nullptr (the default) records nothing.
  void set_activation_recorder(ActivationRecorder* recorder) { recorder_ = recorder; }
  ActivationRecorder* activation_recorder() const { return recorder_; }
  // Tensor parallelism (models/tensor_parallel.h): on a shard, sums each layer's attention
  // output and MLP output over the ranks (an all-reduce), before norms and residuals read
  // them. Inference only. Empty (the default): the model is whole and nothing is summed.
  void set_partial_sum_reducer(PartialSumReducer reducer) { partial_sum_reducer_ = std::move(reducer); }
  const PartialSumReducer& partial_sum_reducer() const { return partial_sum_reducer_; }
  // Embedding, layers in order (with their LoRA), final norm, untied LM head.
  std::vector<ModuleParameters> modules() const;
  // What to gather around a use of lm_head_weight(): the embedding when tied.
  ModuleRef lm_head_module() const;

  // Parameter-efficient fine-tuning (models/peft/adapters.h); both empty for the plain model.
  // LoRA: one LayerLora per layer, applied beside the (usually frozen) projections.
  void set_lora(std::vector<LayerLora> lora);
  const std::vector<LayerLora>& lora() const { return lora_; }
  // P-Tuning v2: each layer's prefix for a batch of `sequences`, computed once per forward
  // without a cache (a generation puts the prefix into its cache itself). `positions` says
  // where the tokens after it count from; a forward without a cache shifts the positions it
  // is given (which start at 0 per sequence) by the prefix length for kAfterPrefix.
  using PrefixSource = std::function<std::vector<PrefixKv>(std::int64_t sequences)>;
  void set_prefix_source(PrefixSource source, PrefixPositions positions = PrefixPositions::kFromZero) {
    prefix_source_ = std::move(source);
    prefix_positions_ = positions;
  }
  const PrefixSource& prefix_source() const { return prefix_source_; }
  PrefixPositions prefix_positions() const { return prefix_positions_; }
  // With the adapters switched off the forward is the base model's, the adapters kept in place
  // (PEFT's disable_adapter(); models/peft/adapters_disabled.h scopes it): the reference model
  // of preference training, without a second copy of the weights.
  void set_adapters_enabled(bool enabled) { adapters_enabled_ = enabled; }
  bool adapters_enabled() const { return adapters_enabled_; }

  // Non-parameter tensors of the checkpoint (RoPE buffers), carried from load to save.
  const NamedTensors& buffers() const { return buffers_; }
  void set_buffers(NamedTensors buffers) { buffers_ = std::move(buffers); }
  // The folder the weights came from (tokenizer and generation files are copied from it on
  // save); empty for a randomly initialised model.
  const std::string& source_dir() const { return source_dir_; }
  void set_source_dir(std::string dir) { source_dir_ = std::move(dir); }

  // input_ids and positions [tokens] (int32/int64), cu_seqlens [sequences + 1] (0, l1,
  // l1 + l2, ..., tokens), on any device (moved to the model's). -> logits [tokens, vocab].
  Variable forward(const Tensor& input_ids, const Tensor& positions, const Tensor& cu_seqlens) const;
  // The final hidden states [tokens, hidden] (after the final norm), for a fused head + loss.
  // With a cache (models/generation/kv_cache.h), run without gradient: the tokens continue the
  // sequences the cache holds, and their keys and values join it.
  Variable forward_hidden(const Tensor& input_ids, const Tensor& positions, const Tensor& cu_seqlens,
                          KvCache* cache = nullptr) const;
  // The same for a packed batch, whose sequences may share prefixes stored once (batch.shared).
  Variable forward_hidden(const PackedBatch& batch) const;
  // The same for inputs already on the model's device whose packed shape the caller knows:
  // nothing is read back to the host, so a CUDA graph can capture it (infer/decode_graph.h).
  Variable forward_hidden_on_device(const Tensor& input_ids, const Tensor& positions, const Tensor& cu_seqlens,
                                    const PackedShape& shape, KvCache* cache) const;
  Variable lm_head(const Variable& hidden) const;
  // The embedding table when tied. Under ZeRO-3, read it inside a GatheredModule of
  // lm_head_module().
  const Variable& lm_head_weight() const;
  // The weights as the forward reads them, for kernels that run the whole forward themselves
  // (infer/persistent_decode.h). The final norm is undefined when the model has none.
  const Variable& embedding_weight() const { return embedding_; }
  const Variable& final_norm_weight() const { return final_norm_; }
  const LayerWeights& layer_weights(std::int64_t layer) const { return layers_.at(static_cast<std::size_t>(layer)); }

  // Mean cross-entropy of logits [tokens, vocab] against labels [tokens] aligned with them
  // (labels[t] is the token that should follow token t), skipping labels of -100.
  Variable loss(const Variable& logits, const Tensor& labels) const;

 private:
  TokenLayout token_layout(const PackedShape& shape, const Tensor& positions, const Tensor& cu_seqlens,
                           KvCache* cache) const;
  Variable forward_packed(const Tensor& input_ids, const Tensor& positions, const Tensor& cu_seqlens,
                          const PackedShape& shape, KvCache* cache, const SharedPrefixes& shared = {}) const;
  ResidualStream run_layer(std::int64_t layer, const ResidualStream& stream, const TokenLayout& tokens,
                           const PrefixKv* prefix, KvCache* cache) const;

  std::shared_ptr<const ModelConfig> config_;
  ModelOptions options_;
  std::vector<NamedParameter> parameters_;
  std::int64_t num_parameters_ = 0;
  ParameterGatherer* gatherer_ = nullptr;
  std::shared_ptr<ParameterGatherer> owned_gatherer_;
  ActivationRecorder* recorder_ = nullptr;
  PartialSumReducer partial_sum_reducer_;
  std::unordered_map<std::string, std::size_t> index_;
  Variable embedding_, final_norm_, head_;
  std::vector<LayerWeights> layers_;
  std::vector<LayerLora> lora_;
  PrefixSource prefix_source_;
  PrefixPositions prefix_positions_ = PrefixPositions::kFromZero;
  bool adapters_enabled_ = true;
  NamedTensors buffers_;
  std::string source_dir_;
};

}  // namespace zt::models
