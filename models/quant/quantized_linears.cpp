#include "models/quant/quantized_linears.h"

#include <sstream>

#include "autograd/grad_mode.h"
#include "models/weights/hf_names.h"
#include "runtime/error.h"

namespace zt::models::quant {
namespace {

void set_empty(const Variable& variable, DType dtype, Device device) {
  variable.impl()->data = Tensor::empty({0}, dtype, device);
}

}  // namespace

QuantizedLinears::QuantizedLinears(std::vector<Entry> entries, DType compute_dtype)
    : entries_(std::move(entries)), compute_dtype_(compute_dtype) {
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const auto layer = static_cast<std::size_t>(entries_[i].layer);
    if (by_layer_.size() <= layer) by_layer_.resize(layer + 1);
    by_layer_[layer].push_back(i);
    by_variable_.emplace(entries_[i].variable.impl().get(), i);
  }
  users_.assign(by_layer_.size(), 0);
  for (const Entry& e : entries_) set_empty(e.variable, compute_dtype_, e.weight.device());
}

void QuantizedLinears::gather(const ModuleRef& module) {
  if (module.kind != ModuleKind::kLayer || module.layer >= static_cast<std::int64_t>(by_layer_.size())) return;
  const auto layer = static_cast<std::size_t>(module.layer);
  if (users_[layer]++ > 0) return;
  for (std::size_t i : by_layer_[layer]) entries_[i].variable.impl()->data = dense(entries_[i]);
}

Tensor QuantizedLinears::dense(const Entry& entry) const {
  Tensor value = entry.weight.dequantize(entry.weight.state.dtype);
  // bitsandbytes dequantizes to the dtype it quantized from, then casts to the compute dtype.
  return value.dtype() == compute_dtype_ ? value : value.to(compute_dtype_);
}

bool QuantizedLinears::produces(const Variable& weight) const { return by_variable_.contains(weight.impl().get()); }

Tensor QuantizedLinears::produce(const Variable& weight) const {
  const auto found = by_variable_.find(weight.impl().get());
  ZT_REQUIRE(found != by_variable_.end(), "4-bit weights: asked for a weight they do not hold");
  return dense(entries_[found->second]);
}

void QuantizedLinears::release(const ModuleRef& module) {
  if (module.kind != ModuleKind::kLayer || module.layer >= static_cast<std::int64_t>(by_layer_.size())) return;
  const auto layer = static_cast<std::size_t>(module.layer);
  ZT_REQUIRE(users_[layer] > 0, "4-bit weights: " + module_name(module) + " was released more often than gathered");
  if (--users_[layer] > 0) return;
  for (std::size_t i : by_layer_[layer]) set_empty(entries_[i].variable, compute_dtype_, entries_[i].weight.device());
}

bool QuantizedLinears::multiplies_held(const ModuleRef& module, std::int64_t rows) const {
  return module.kind == ModuleKind::kLayer && module.layer < static_cast<std::int64_t>(by_layer_.size()) &&
         !by_layer_[static_cast<std::size_t>(module.layer)].empty() && multiplies_packed(rows, compute_dtype_);
}

std::optional<Tensor> QuantizedLinears::held_linear(const Variable& weight, const Tensor& x, const Tensor& bias) const {
  const auto found = by_variable_.find(weight.impl().get());
  if (found == by_variable_.end()) return std::nullopt;
  return entries_[found->second].weight.linear(x, bias);
}

std::int64_t QuantizedLinears::nbytes() const {
  std::int64_t total = 0;
  for (const Entry& e : entries_) total += e.weight.nbytes();
  return total;
}

std::vector<std::vector<ParamSpec>> quantizable_linear_specs(const ModelConfig& config) {
  std::vector<std::vector<ParamSpec>> layers;
  for (const LayerSpecs& specs : parameter_layout(config).layers) {
    layers.emplace_back();
    for (int slot : kLinearSlots)
      if (specs[slot]) layers.back().push_back(*specs[slot]);
  }
  return layers;
}

bool is_quantizable_linear(const ModelConfig& config, const std::string& parameter_name) {
  for (const std::vector<ParamSpec>& layer : quantizable_linear_specs(config))
    for (const ParamSpec& spec : layer)
      if (spec.name == parameter_name) return true;
  return false;
}

std::int64_t resident_weight_bytes(const CausalLM& model) {
  const auto width = static_cast<std::int64_t>(dtype_size(model.dtype()));
  std::int64_t bytes = model.num_parameters() * width;
  if (const auto* linears = dynamic_cast<const QuantizedLinears*>(model.owned_parameter_gatherer().get()))
    for (const QuantizedLinears::Entry& e : linears->entries())
      bytes += e.weight.nbytes() - e.weight.state.numel() * width;
  return bytes;
}

namespace {

std::string mib(std::int64_t bytes) {
  std::ostringstream text;
  text.precision(1);
  text << std::fixed << static_cast<double>(bytes) / (1024.0 * 1024.0) << " MiB";
  return text.str();
}

}  // namespace

std::string held_in_4bit(const CausalLM& model) {
  const auto* linears = dynamic_cast<const QuantizedLinears*>(model.owned_parameter_gatherer().get());
  if (linears == nullptr) return "";
  std::int64_t dense = 0;
  for (const QuantizedLinears::Entry& e : linears->entries())
    dense += e.weight.state.numel() * static_cast<std::int64_t>(dtype_size(model.dtype()));
  return std::to_string(linears->entries().size()) + " linear weights in " + mib(linears->nbytes()) + " instead of " +
         mib(dense);
}

bool is_skipped_module(const std::string& parameter_name, const std::vector<std::string>& skip_modules) {
  const std::string module = parameter_name.ends_with(".weight")
                                 ? parameter_name.substr(0, parameter_name.size() - std::string(".weight").size())
                                 : parameter_name;
  for (const std::string& skip : skip_modules) {
    if (skip.empty()) continue;
    if (module == skip || module.ends_with("." + skip) || module.find(skip + ".") != std::string::npos) return true;
  }
  return false;
}

std::int64_t quantize_linears(CausalLM& model, const Quant4Options& options,
                              const std::vector<std::string>& skip_modules) {
  ZT_REQUIRE(model.parameter_gatherer() == nullptr,
             "4-bit base weights cannot be combined with ZeRO stage 3 (both partition the model's weights): "
             "use ZeRO stage 0-2, or drop --quantization_bit");
  std::vector<QuantizedLinears::Entry> entries;
  const std::vector<std::vector<ParamSpec>> layers = quantizable_linear_specs(model.config());
  for (std::size_t layer = 0; layer < layers.size(); ++layer)
    for (const ParamSpec& spec : layers[layer]) {
      if (is_skipped_module(spec.name, skip_modules)) continue;
      const Variable& variable = model.parameter(spec.name);
      ZT_REQUIRE(!variable.requires_grad(),
                 "'" + spec.name +
                     "' is trained, but 4-bit weights are frozen: train LoRA on a 4-bit base "
                     "(--finetuning_type lora)");
      entries.push_back({static_cast<std::int64_t>(layer), spec.name, variable,
                         quantize_weight(variable.data(), options, spec.name)});
    }
  auto linears = std::make_shared<QuantizedLinears>(std::move(entries), model.dtype());
  const std::int64_t bytes = linears->nbytes();
  model.own_parameter_gatherer(std::move(linears));
  return bytes;
}

void round_trip_linears(CausalLM& model, const Quant4Options& options, DType stored_dtype,
                        const std::vector<std::string>& skip_modules) {
  autograd::NoGradGuard no_recording;
  for (const NamedParameter& p : model.named_parameters()) {
    if (!is_quantizable_linear(model.config(), p.name) || is_skipped_module(p.name, skip_modules)) continue;
    Tensor target = p.variable.data();
    target.copy_from(quantize_weight(target.to(stored_dtype), options, p.name).dequantize(stored_dtype));
  }
}

}  // namespace zt::models::quant
