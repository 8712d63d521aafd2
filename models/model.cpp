#include "models/model.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <optional>

#include "autograd/checkpoint.h"
#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "models/model_embedding.h"
#include "models/model_inputs.h"
#include "models/quant/quantized_linears.h"
#include "models/weights/hf_names.h"
#include "runtime/error.h"

namespace zt::models {

namespace {

// Positions moved `offset` further (a PEFT prefix counts as tokens already seen). Read back
// on the host: only a forward without a cache takes this path, never a decode step.
Tensor shifted_positions(const Tensor& positions, std::int64_t offset) {
  std::vector<double> values = positions.to(Device::cpu()).to_vector();
  for (double& v : values) v += static_cast<double>(offset);
  return Tensor::from_values(values, positions.shape(), positions.dtype()).to(positions.device());
}

SharedPrefixes on_device(const SharedPrefixes& shared, Device device) {
  auto moved = [device](const Tensor& t) { return t.defined() ? t.to(device) : Tensor(); };
  auto moved_gather = [&](const ops::RowGather& g) {
    return ops::RowGather{moved(g.index), moved(g.first_source), moved(g.second_source)};
  };
  return {moved_gather(shared.expand), moved_gather(shared.compact), moved(shared.cu_seqlens)};
}

// A layer's weights one GEMM may read together (the joined projections of models/decoder.cpp):
// each group, in slot order, is one allocation whose rows its parameters view, so [q; k; v]
// and [gate; up] exist as matrices without a copy. A group with a 4-bit or missing member is
// allocated apart.
template <typename Packed>
std::array<Tensor, kLayerSlotCount> allocated_together(const LayerSpecs& specs, const Packed& packed, DType dtype,
                                                       Device device) {
  static const std::vector<std::vector<int>> kGroups = {{kQ, kK, kV}, {kQBias, kKBias, kVBias}, {kGate, kUp}};
  std::array<Tensor, kLayerSlotCount> storage;
  for (const std::vector<int>& group : kGroups) {
    std::int64_t total = 0;
    bool whole = true;
    for (int slot : group) {
      whole = whole && specs[slot] && !packed(slot, *specs[slot]);
      if (specs[slot]) total += shape_numel(specs[slot]->shape);
    }
    if (!whole) continue;
    const Tensor buffer = Tensor::zeros({total}, dtype, device);
    std::int64_t offset = 0;
    for (int slot : group) {
      const std::int64_t numel = shape_numel(specs[slot]->shape);
      storage[slot] = buffer.narrow(0, offset, numel).view(specs[slot]->shape);
      offset += numel;
    }
  }
  return storage;
}

}  // namespace

CausalLM::CausalLM(ModelConfig config, ModelOptions options)
    : config_(std::make_shared<const ModelConfig>(std::move(config))), options_(options) {
  ZT_REQUIRE(is_floating(options_.dtype),
             std::string("a model's dtype must be floating point, got ") + dtype_name(options_.dtype));
  // 4-bit linears start empty: their values arrive as a QuantizedLinears (models/quant/).
  auto add = [this](const ParamSpec& spec, bool unallocated = false, const Tensor& storage = Tensor()) {
    Variable v(unallocated         ? Tensor::empty({0}, options_.dtype, options_.device)
               : storage.defined() ? storage
                                   : Tensor::zeros(spec.shape, options_.dtype, options_.device),
               true, spec.name);
    index_[spec.name] = parameters_.size();
    parameters_.push_back({spec.name, v});
    num_parameters_ += shape_numel(spec.shape);
    return v;
  };
  const bool four_bit = options_.linears_in_4bit(*config_);
  auto packed = [&](int slot, const ParamSpec& spec) {
    return four_bit && std::find(std::begin(kLinearSlots), std::end(kLinearSlots), slot) != std::end(kLinearSlots) &&
           !(options_.keep_4bit_weights && quant::is_skipped_module(spec.name, config_->bnb_skip_modules));
  };
  ParameterLayout layout = parameter_layout(*config_);
  embedding_ = add(layout.embedding);
  for (const LayerSpecs& specs : layout.layers) {
    const std::array<Tensor, kLayerSlotCount> storage =
        allocated_together(specs, packed, options_.dtype, options_.device);
    LayerWeights weights;
    for (int slot = 0; slot < kLayerSlotCount; ++slot)
      if (specs[slot]) weights[slot] = add(*specs[slot], packed(slot, *specs[slot]), storage[slot]);
    layers_.push_back(weights);
  }
  if (layout.final_norm) final_norm_ = add(*layout.final_norm);
  head_ = layout.lm_head ? add(*layout.lm_head) : embedding_;
}

std::vector<Variable> CausalLM::parameters() const {
  std::vector<Variable> result;
  for (const auto& p : parameters_) result.push_back(p.variable);
  return result;
}

const Variable& CausalLM::parameter(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) {
    std::vector<std::string> names;
    for (const auto& p : parameters_) names.push_back(p.name);
    fail("the " + std::string(architecture_name(config_->arch)) + " model has no parameter '" + name +
         "'; its parameters are " + sample_names(names));
  }
  return parameters_[it->second].variable;
}

void CausalLM::zero_grad() const {
  for (const auto& p : parameters_) p.variable.zero_grad();
}

std::vector<ModuleParameters> CausalLM::modules() const {
  auto named = [](const Variable& v) { return NamedParameter{v.name(), v}; };
  std::vector<ModuleParameters> modules;
  modules.push_back({{ModuleKind::kEmbedding}, {named(embedding_)}});
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    ModuleParameters layer{{ModuleKind::kLayer, static_cast<std::int64_t>(i)}, {}};
    for (const Variable& weight : layers_[i])
      if (weight.defined()) layer.parameters.push_back(named(weight));
    if (!lora_.empty())
      for (const auto& update : lora_[i])
        if (update) {
          layer.parameters.push_back(named(update->a));
          layer.parameters.push_back(named(update->b));
        }
    modules.push_back(std::move(layer));
  }
  if (final_norm_.defined()) modules.push_back({{ModuleKind::kFinalNorm}, {named(final_norm_)}});
  if (head_.impl() != embedding_.impl()) modules.push_back({{ModuleKind::kLmHead}, {named(head_)}});
  return modules;
}

ModuleRef CausalLM::lm_head_module() const {
  return {head_.impl() == embedding_.impl() ? ModuleKind::kEmbedding : ModuleKind::kLmHead};
}

TokenLayout CausalLM::token_layout(const PackedShape& shape, const Tensor& positions, const Tensor& cu_seqlens,
                                   KvCache* cache) const {
  if (cache != nullptr)
    cache->begin_forward(*config_, shape);
  else
    check_sliding_window(*config_, shape, 0);
  return {positions.to(options_.device, DType::kI64), cu_seqlens.to(options_.device, DType::kI32), options_.attn_impl,
          options_.deterministic_attention};
}

void CausalLM::set_lora(std::vector<LayerLora> lora) {
  ZT_REQUIRE(
      lora.empty() || static_cast<std::int64_t>(lora.size()) == config_->num_layers,
      "LoRA for " + std::to_string(lora.size()) + " layers on a model of " + std::to_string(config_->num_layers));
  lora_ = std::move(lora);
}

ResidualStream CausalLM::run_layer(std::int64_t layer, const ResidualStream& stream, const TokenLayout& tokens,
                                   const PrefixKv* prefix, KvCache* cache) const {
  const auto index = static_cast<std::size_t>(layer);
  const LayerLora* lora = lora_.empty() || !adapters_enabled_ ? nullptr : &lora_[index];
  const PartialSumReducer* reducer = partial_sum_reducer_ ? &partial_sum_reducer_ : nullptr;
  const ModuleRef module{ModuleKind::kLayer, layer};
  // The 4-bit base on a decode step: the linears multiply the packed weights, nothing gathered.
  const bool held = gatherer_ != nullptr && !autograd::grad_enabled() &&
                    gatherer_->multiplies_held(module, stream.residual.data().size(0));
  const LayerParameters parameters{
      &layers_[index], lora, prefix, autograd::grad_enabled(), {recorder_, layer}, reducer, held ? gatherer_ : nullptr};
  if (held) return decoder_layer(*config_, layer, parameters, stream, tokens, cache);
  // A gatherer whose weights backward can produce again (the 4-bit base) needs no recompute.
  const autograd::WeightSource* rereads = gatherer_ != nullptr ? gatherer_->weight_source() : nullptr;
  const bool recompute = cache == nullptr && autograd::grad_enabled() &&
                         (options_.gradient_checkpointing || (gatherer_ != nullptr && rereads == nullptr));
  if (!recompute) {
    GatheredModule gathered(gatherer_, module);  // without gradients, or kept by reference: gather, run, release
    autograd::RereadWeights kept_by_reference(rereads);
    return decoder_layer(*config_, layer, parameters, stream, tokens, cache);
  }
  // A recomputed layer takes and gives one tensor: the stream is summed at its boundary.
  const LayerWeights& weights = layers_[index];
  std::vector<Variable> inputs{stream.summed()};
  std::vector<int> slots;
  for (int slot = 0; slot < kLayerSlotCount; ++slot)
    if (weights[slot].defined()) {
      inputs.push_back(weights[slot]);
      slots.push_back(slot);
    }
  const std::vector<Variable> adapters = adapter_inputs(lora, prefix);
  inputs.insert(inputs.end(), adapters.begin(), adapters.end());
  // The recompute runs during backward, after this call returns: it owns what it reads.
  std::optional<LayerLora> lora_copy = lora ? std::optional<LayerLora>(*lora) : std::nullopt;
  std::optional<PrefixKv> prefix_copy = prefix ? std::optional<PrefixKv>(*prefix) : std::nullopt;
  auto fn = [config = config_, layer, slots, tokens, lora_copy, prefix_copy,
             recorder = recorder_](const std::vector<Variable>& in) mutable {
    LayerWeights w;
    for (std::size_t i = 0; i < slots.size(); ++i) w[slots[i]] = in[i + 1];
    LayerLora* l = lora_copy ? &*lora_copy : nullptr;
    PrefixKv* p = prefix_copy ? &*prefix_copy : nullptr;
    rebind_adapter_inputs(in, slots.size() + 1, l, p);
    // Both runs train, though the first records nothing: dropout masks must match. Activations
    // are recorded by the first run (gradients off), not again by the recompute (gradients on).
    const LayerRecording record{autograd::grad_enabled() ? nullptr : recorder, layer};
    return std::vector<Variable>{decoder_layer(*config, layer, {&w, l, p, true, record}, in[0], tokens)};
  };
  // ZeRO-3: the layer's weights exist only inside the gathered forward and recompute.
  if (gatherer_ != nullptr) return {gathered_checkpoint(*gatherer_, module, fn, inputs)[0], Variable()};
  return {autograd::checkpoint(fn, inputs)[0], Variable()};
}

Variable CausalLM::forward_hidden(const Tensor& input_ids, const Tensor& positions, const Tensor& cu_seqlens,
                                  KvCache* cache) const {
  return forward_packed(input_ids, positions, cu_seqlens, check_packed_inputs(input_ids, positions, cu_seqlens), cache);
}

Variable CausalLM::forward_hidden_on_device(const Tensor& input_ids, const Tensor& positions, const Tensor& cu_seqlens,
                                            const PackedShape& shape, KvCache* cache) const {
  for (const Tensor* t : {&input_ids, &positions, &cu_seqlens})
    ZT_REQUIRE(t->device() == options_.device, "forward_hidden_on_device: inputs must already be on " +
                                                   options_.device.str() + ", got one on " + t->device().str());
  ZT_REQUIRE(input_ids.numel() == shape.tokens && cu_seqlens.numel() == shape.sequences + 1,
             "forward_hidden_on_device: the inputs do not have the stated shape");
  return forward_packed(input_ids, positions, cu_seqlens, shape, cache);
}

Variable CausalLM::forward_hidden(const PackedBatch& batch) const {
  const PackedShape shape = check_packed_inputs(batch.input_ids, batch.positions, batch.cu_seqlens);
  return forward_packed(batch.input_ids, batch.positions, batch.cu_seqlens, shape, nullptr, batch.shared);
}

Variable CausalLM::forward_packed(const Tensor& input_ids, const Tensor& positions, const Tensor& cu_seqlens,
                                  const PackedShape& shape, KvCache* cache, const SharedPrefixes& shared) const {
  std::optional<autograd::NoGradGuard> no_grad;
  if (cache != nullptr) no_grad.emplace();
  TokenLayout tokens = token_layout(shape, positions, cu_seqlens, cache);
  if (shared.defined()) tokens.shared = on_device(shared, options_.device);
  Tensor ids = input_ids.to(options_.device);
  Variable x;
  {
    GatheredModule gathered(gatherer_, {ModuleKind::kEmbedding});
    x = token_embedding(embedding_, ids, config_->pad_token_id, options_.deterministic);
    record_activation(recorder_, "model.embed_tokens", x);
  }
  std::vector<PrefixKv> prefixes;
  if (prefix_source_ && adapters_enabled_ && cache == nullptr) {
    GatheredModule gathered(gatherer_, {ModuleKind::kPrefixEncoder});
    prefixes = prefix_source_(tokens.cu_seqlens.numel() - 1);
  }
  ZT_REQUIRE(prefixes.empty() || !shared.defined(),
             "model forward: sequences stored with shared prefixes cannot take a P-Tuning prefix as well");
  if (!prefixes.empty() && prefix_positions_ == PrefixPositions::kAfterPrefix)
    tokens.positions = shifted_positions(tokens.positions, prefixes.front().keys.data().size(1));
  ResidualStream stream{x, Variable()};
  for (std::int64_t layer = 0; layer < config_->num_layers; ++layer)
    stream = run_layer(layer, stream, tokens, prefixes.empty() ? nullptr : &prefixes[static_cast<std::size_t>(layer)],
                       cache);
  if (cache != nullptr) cache->end_forward();
  if (!final_norm_.defined()) return stream.summed();
  GatheredModule gathered(gatherer_, {ModuleKind::kFinalNorm});
  return record_activation(recorder_, "model.norm", normed_stream(*config_, stream, final_norm_).normed);
}

Variable CausalLM::lm_head(const Variable& hidden) const {
  GatheredModule gathered(gatherer_, lm_head_module());
  return record_activation(recorder_, "lm_head", autograd::linear(hidden, head_));
}

const Variable& CausalLM::lm_head_weight() const { return head_; }

Variable CausalLM::forward(const Tensor& input_ids, const Tensor& positions, const Tensor& cu_seqlens) const {
  return lm_head(forward_hidden(input_ids, positions, cu_seqlens));
}

Variable CausalLM::loss(const Variable& logits, const Tensor& labels) const {
  ZT_REQUIRE(labels.dim() == 1 && logits.data().dim() == 2 && labels.size(0) == logits.data().size(0),
             "loss: labels " + shape_str(labels.shape()) + " must be [tokens] beside logits " +
                 shape_str(logits.data().shape()));
  return autograd::cross_entropy(logits, labels.to(options_.device));
}

}  // namespace zt::models
