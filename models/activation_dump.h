// Activations recorded by name during one forward, to compare zerotune with another
// framework tensor by tensor (scripts/compare_activations.py does, against transformers).
// A CausalLM with a recorder (CausalLM::set_activation_recorder) hands it the output of each
// point under the name of transformers' module that computes it (docs/MODELS.md lists them);
// without one, a point costs a null check.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "autograd/variable.h"
#include "tensor/safetensors/safetensors.h"

namespace zt::models {

class ActivationRecorder {
 public:
  // Keeps a float32 host copy of `value` as [tokens, features] (the dims after the first
  // flattened), whatever the model's device and dtype. A name recorded twice is an error: a
  // recorder holds one forward, so clear() it before the next.
  void record(const std::string& name, const Tensor& value);

  bool empty() const { return activations_.empty(); }
  bool contains(const std::string& name) const { return index_.count(name) != 0; }
  // Throws naming some recorded names when `name` was not recorded.
  const Tensor& get(const std::string& name) const;
  // In the order recorded.
  const NamedTensors& activations() const { return activations_; }
  void clear();
  // One safetensors file of every activation, in the order recorded.
  void save(const std::string& path) const;

 private:
  NamedTensors activations_;
  std::unordered_map<std::string, std::size_t> index_;
};

// "model.layers.<layer>.<point>", or "model.layers.<layer>" for an empty point.
std::string layer_activation_name(std::int64_t layer, const std::string& point);

// Records `value` when a recorder is set and passes it through, so a point is one call.
inline autograd::Variable record_activation(ActivationRecorder* recorder, const char* name,
                                            const autograd::Variable& value) {
  if (recorder != nullptr) recorder->record(name, value.data());
  return value;
}

// A decoder layer's points, named after its layer (the name is built only when recording).
struct LayerRecording {
  ActivationRecorder* recorder = nullptr;
  std::int64_t layer = 0;

  autograd::Variable operator()(const char* point, const autograd::Variable& value) const {
    if (recorder != nullptr) recorder->record(layer_activation_name(layer, point), value.data());
    return value;
  }
};

}  // namespace zt::models
