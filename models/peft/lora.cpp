#include "models/peft/lora.h"

#include <cmath>

#include "autograd/grad_mode.h"
#include "models/peft/lora_targets.h"
#include "models/weights/hf_names.h"
#include "ops/elementwise/elementwise.h"
#include "ops/gemm/matmul.h"
#include "runtime/error.h"
#include "runtime/philox.h"
#include "runtime/terminal/text_list.h"
#include "runtime/usage_error.h"

namespace zt::models {
namespace {

// "model.layers.0.self_attn.q_proj.weight" -> "model.layers.0.self_attn.q_proj".
std::string module_path(const ParamSpec& spec) { return spec.name.substr(0, spec.name.size() - 7); }

std::string short_name(const std::string& path) { return path.substr(path.rfind('.') + 1); }

// Every layer weight that is a matrix is the weight of a linear module.
bool is_linear(const std::optional<ParamSpec>& spec) { return spec && spec->kind == ParamKind::kMatrix; }

std::string peft_name(const ParamSpec& base, const char* matrix) {
  return "base_model.model." + module_path(base) + "." + matrix + ".weight";
}

}  // namespace

std::vector<std::string> lora_module_names(const ModelConfig& config) {
  std::vector<std::string> names;
  const ParameterLayout layout = parameter_layout(config);
  if (layout.layers.empty()) return names;
  for (const auto& spec : layout.layers.front())
    if (is_linear(spec)) names.push_back(short_name(module_path(*spec)));
  return names;
}

std::vector<std::string> parse_lora_target(const std::string& text, const ModelConfig& config) {
  const std::vector<std::string> known = lora_module_names(config);
  std::vector<std::string> names = split_comma_list(text);
  if (names.size() == 1 && (names[0] == "all" || names[0] == "all-linear")) return known;
  // A wrong name is a wrong command line (or arguments file): a usage error, exit code 2.
  ZT_REQUIRE_USAGE(!names.empty(),
                   "--lora_target is empty; give module names such as " + join_list(known) + ", or all");
  const ParameterLayout layout = parameter_layout(config);
  for (const std::string& name : names) {
    bool found = false;
    for (const LayerSpecs& layer : layout.layers)
      for (const auto& spec : layer) found = found || (is_linear(spec) && names_module({name}, module_path(*spec)));
    ZT_REQUIRE_USAGE(found, "--lora_target '" + name + "' is not a linear module of the " +
                                architecture_name(config.arch) + " model's layers; its modules are " +
                                join_list(known) + " (or all for every one of them)");
  }
  return names;
}

void attach_lora(CausalLM& model, const LoraConfig& config, std::uint64_t seed) {
  ZT_REQUIRE(config.rank > 0, "LoRA rank must be > 0, got " + std::to_string(config.rank));
  const ParameterLayout layout = parameter_layout(model.config());
  const auto chosen = lora_target_slots(model.config(), config);  // an error when it targets nothing
  std::vector<LayerLora> lora(layout.layers.size());
  std::uint64_t offset = 0;
  for (std::size_t i = 0; i < layout.layers.size(); ++i)
    for (int slot = 0; slot < kLayerSlotCount; ++slot) {
      const auto& spec = layout.layers[i][slot];
      if (!chosen[i][slot]) continue;
      const std::int64_t out = spec->shape[0], in = spec->shape[1];
      const double bound = 1.0 / std::sqrt(static_cast<double>(in));
      Tensor a = Tensor::uniform({config.rank, in}, seed, offset, -bound, bound, DType::kF32);
      offset += philox::blocks_for(static_cast<std::uint64_t>(a.numel()));
      LoraUpdate update;
      update.a = Variable(a.to(model.device(), model.dtype()), true, peft_name(*spec, "lora_A"));
      update.b =
          Variable(Tensor::zeros({out, config.rank}, model.dtype(), model.device()), true, peft_name(*spec, "lora_B"));
      update.scale = config.scale();
      update.dropout = config.dropout;
      lora[i][slot] = update;
    }
  model.set_lora(std::move(lora));
}

std::vector<NamedParameter> lora_parameters(const CausalLM& model) {
  std::vector<NamedParameter> parameters;
  for (const LayerLora& layer : model.lora())
    for (const auto& update : layer)
      if (update) {
        parameters.push_back({update->a.name(), update->a});
        parameters.push_back({update->b.name(), update->b});
      }
  return parameters;
}

void merge_lora(CausalLM& model) {
  autograd::NoGradGuard no_recording;
  const ParameterLayout layout = parameter_layout(model.config());
  for (std::size_t i = 0; i < model.lora().size(); ++i)
    for (int slot = 0; slot < kLayerSlotCount; ++slot) {
      const auto& update = model.lora()[i][slot];
      if (!update) continue;
      Tensor delta = ops::matmul_forward(update->b.data().to(DType::kF32), update->a.data().to(DType::kF32));
      Tensor weight = model.parameter(layout.layers[i][slot]->name).data();
      weight.copy_from(ops::add_forward(weight.to(DType::kF32), ops::scale_forward(delta, update->scale)));
    }
  model.set_lora({});
}

}  // namespace zt::models
