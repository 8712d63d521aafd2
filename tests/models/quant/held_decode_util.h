// What the 4-bit tests share: the tiny model's 4-bit folder loaded kept 4-bit, a LoRA with random
// B beside its weights, and a gatherer that counts the layer gathers of the model's own
// (QuantizedLinears), so a test sees which forwards multiplied the packed weights instead, and
// the weights backward dequantized again (a layer that kept its activations).
#pragma once

#include <memory>
#include <string>

#include "models/model.h"
#include "models/peft/lora.h"
#include "tensor/tensor.h"

namespace zt::models::quant {

class GatherCounter : public ParameterGatherer, public autograd::WeightSource {
 public:
  explicit GatherCounter(std::shared_ptr<ParameterGatherer> inner) : inner_(std::move(inner)) {}
  // Wraps the model's own gatherer; returns the counter the model now owns.
  static GatherCounter& install(CausalLM& model) {
    auto counter = std::make_shared<GatherCounter>(model.owned_parameter_gatherer());
    model.own_parameter_gatherer(counter);
    return *counter;
  }

  void gather(const ModuleRef& module) override {
    if (module.kind == ModuleKind::kLayer) ++layer_gathers;
    inner_->gather(module);
  }
  void release(const ModuleRef& module) override { inner_->release(module); }
  bool multiplies_held(const ModuleRef& module, std::int64_t rows) const override {
    return inner_->multiplies_held(module, rows);
  }
  std::optional<Tensor> held_linear(const Variable& weight, const Tensor& x, const Tensor& bias) const override {
    return inner_->held_linear(weight, x, bias);
  }

  const autograd::WeightSource* weight_source() const override {
    return inner_->weight_source() != nullptr ? this : nullptr;
  }
  bool produces(const Variable& weight) const override { return inner_->weight_source()->produces(weight); }
  Tensor produce(const Variable& weight) const override {
    ++weights_produced;
    return inner_->weight_source()->produce(weight);
  }

  int layer_gathers = 0;
  mutable int weights_produced = 0;

 private:
  std::shared_ptr<ParameterGatherer> inner_;
};

// LoRA on the attention and MLP projections, B drawn at random (it starts at zero, which would
// change nothing).
inline void attach_random_lora(CausalLM& model) {
  attach_lora(
      model,
      {.rank = 4, .alpha = 8.0, .target_modules = {"q_proj", "v_proj", "down_proj"}, .base_model_name_or_path = ""}, 7);
  std::uint64_t offset = 0;
  for (const NamedParameter& p : lora_parameters(model))
    if (p.name.find("lora_B") != std::string::npos) {
      Tensor b = p.variable.data();  // shares the parameter's storage
      b.copy_from(Tensor::normal(b.shape(), 11, offset++, 0.0, 0.5).to(b.device(), b.dtype()));
    }
}

}  // namespace zt::models::quant
