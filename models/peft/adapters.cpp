#include "models/peft/adapters.h"

#include "autograd/functions.h"

namespace zt::models {

std::vector<Variable> adapter_inputs(const LayerLora* lora, const PrefixKv* prefix) {
  std::vector<Variable> inputs;
  if (lora != nullptr)
    for (const auto& update : *lora)
      if (update) {
        inputs.push_back(update->a);
        inputs.push_back(update->b);
      }
  if (prefix != nullptr) {
    inputs.push_back(prefix->keys);
    inputs.push_back(prefix->values);
  }
  return inputs;
}

void rebind_adapter_inputs(const std::vector<Variable>& inputs, std::size_t first, LayerLora* lora, PrefixKv* prefix) {
  std::size_t next = first;
  if (lora != nullptr)
    for (auto& update : *lora)
      if (update) {
        update->a = inputs.at(next++);
        update->b = inputs.at(next++);
      }
  if (prefix != nullptr) {
    prefix->keys = inputs.at(next++);
    prefix->values = inputs.at(next++);
  }
}

Variable lora_delta(const Variable& x, const LoraUpdate& update, bool training) {
  Variable down = autograd::linear(autograd::dropout(x, update.dropout, training), update.a);
  return autograd::scale(autograd::linear(down, update.b), update.scale);
}

}  // namespace zt::models
