#include "models/activation_dump.h"

#include <vector>

#include "runtime/error.h"

namespace zt::models {
namespace {

// A copy that nothing else shares: a CPU float32 activation's storage may be reused.
Tensor host_float_copy(const Tensor& value) {
  Tensor host = value.to(Device::cpu(), DType::kF32);
  return host.storage() == value.storage() ? host.clone() : host.contiguous();
}

}  // namespace

void ActivationRecorder::record(const std::string& name, const Tensor& value) {
  ZT_REQUIRE(!contains(name), "activation '" + name +
                                  "' recorded twice: an ActivationRecorder holds one forward, clear() it between "
                                  "forwards");
  ZT_REQUIRE(value.dim() >= 1, "activation '" + name + "' has no token dimension");
  std::int64_t features = 1;
  for (std::int64_t d = 1; d < value.dim(); ++d) features *= value.size(d);
  index_[name] = activations_.size();
  activations_.emplace_back(name, host_float_copy(value).reshape({value.size(0), features}));
}

const Tensor& ActivationRecorder::get(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) {
    std::vector<std::string> names;
    for (const auto& [recorded, tensor] : activations_) names.push_back(recorded);
    fail("no activation '" + name + "' was recorded; recorded: " + sample_names(names));
  }
  return activations_[it->second].second;
}

void ActivationRecorder::clear() {
  activations_.clear();
  index_.clear();
}

void ActivationRecorder::save(const std::string& path) const {
  save_safetensors(path, activations_, {{"format", "pt"}});
}

std::string layer_activation_name(std::int64_t layer, const std::string& point) {
  std::string name = "model.layers." + std::to_string(layer);
  return point.empty() ? name : name + "." + point;
}

}  // namespace zt::models
