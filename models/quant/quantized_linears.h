// A model's frozen linear weights held in 4 bits (QLoRA's base), dequantized one layer at a
// time. It is the model's parameter gatherer (models/parameter_gatherer.h): between uses every
// quantized weight's Variable holds an empty tensor; gather(layer i) dequantizes that layer's
// weights into them (the model's dtype, on its device), release(layer i) lets them go. A layer
// that records gradients keeps only references to its weights (this is their WeightSource,
// autograd/saved_weight.h), and backward dequantizes each weight once more for its input
// gradient; with --gradient_checkpointing the layer is recomputed in backward from a new gather
// instead. Either way at most one layer's weights exist whole at a time (one weight, in the
// first case's backward), and the weights get no gradient (they are frozen; LoRA trains).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/model.h"
#include "models/quant/quantized_weight.h"

namespace zt::models::quant {

class QuantizedLinears : public ParameterGatherer, public autograd::WeightSource {
 public:
  struct Entry {
    std::int64_t layer = 0;
    std::string name;  // the parameter's checkpoint name
    Variable variable;
    Quant4Weight weight;
  };
  QuantizedLinears(std::vector<Entry> entries, DType compute_dtype);

  void gather(const ModuleRef& module) override;
  void release(const ModuleRef& module) override;
  bool multiplies_held(const ModuleRef& module, std::int64_t rows) const override;
  std::optional<Tensor> held_linear(const Variable& weight, const Tensor& x, const Tensor& bias) const override;
  const autograd::WeightSource* weight_source() const override { return this; }
  bool produces(const Variable& weight) const override;
  Tensor produce(const Variable& weight) const override;  // dequantized, as gather() does

  const std::vector<Entry>& entries() const { return entries_; }
  std::int64_t nbytes() const;  // the 4-bit weights with their scales

 private:
  Tensor dense(const Entry& entry) const;

  std::vector<Entry> entries_;
  std::vector<std::vector<std::size_t>> by_layer_;
  std::unordered_map<const autograd::VariableImpl*, std::size_t> by_variable_;
  std::vector<int> users_;  // gathers not yet released, per layer
  DType compute_dtype_;
};

// The decoder layers' linear weights (attention q, k, v, o, MLP gate, up, down, or their fused
// forms): what bitsandbytes replaces (every nn.Linear but the LM head); embeddings, norms and
// biases stay as they are. By layer, in checkpoint order.
std::vector<std::vector<ParamSpec>> quantizable_linear_specs(const ModelConfig& config);
bool is_quantizable_linear(const ModelConfig& config, const std::string& parameter_name);

// The bytes the model's weights hold on its device: num_parameters() in its dtype, less the
// linears held in 4 bits, plus those 4 bits with their scales.
std::int64_t resident_weight_bytes(const CausalLM& model);

// What the model holds in 4 bits against the same weights in its dtype, for a log line:
// "21 linear weights in 0.1 MiB instead of 0.7 MiB"; empty for a model without 4-bit linears.
std::string held_in_4bit(const CausalLM& model);

// transformers' llm_int8_skip_modules: `name` (a parameter) belongs to a module listed there.
bool is_skipped_module(const std::string& parameter_name, const std::vector<std::string>& skip_modules);

// Quantizes the model's quantizable linear weights (but those of skipped modules) as
// bitsandbytes would, frees their dense values and makes the result the model's gatherer
// (CausalLM::own_parameter_gatherer). The weights must be frozen and no gatherer set yet.
// Returns the bytes the 4-bit weights hold.
std::int64_t quantize_linears(CausalLM& model, const Quant4Options& options,
                              const std::vector<std::string>& skip_modules = {});

// The dense base as a QLoRA run computed with it: each quantizable linear weight (but skipped
// modules) replaced by its 4-bit round trip, quantized from and dequantized to `stored_dtype`
// (the dtype the weights were loaded in) and converted back to the model's dtype. What an
// adapter trained on that base is merged into.
void round_trip_linears(CausalLM& model, const Quant4Options& options, DType stored_dtype,
                        const std::vector<std::string>& skip_modules = {});

}  // namespace zt::models::quant
