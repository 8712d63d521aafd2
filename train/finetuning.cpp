#include "train/finetuning.h"

#include <sstream>

#include "runtime/error.h"

namespace zt::train {
namespace {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

// The layer index in a parameter name ("model.layers.12.mlp..." -> 12), or -1.
std::int64_t layer_of(const std::string& name) {
  const std::string marker = "layers.";
  auto at = name.find(marker);
  if (at == std::string::npos) return -1;
  std::size_t start = at + marker.size(), end = start;
  while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
  return end > start ? std::stoll(name.substr(start, end - start)) : -1;
}

bool freeze_trains(const std::string& name, const TrainingArguments& args, std::int64_t num_layers,
                   const std::vector<std::string>& modules) {
  const std::int64_t layer = layer_of(name);
  if (layer < 0) return false;
  const std::int64_t n = args.freeze_trainable_layers;
  const bool in_range = n > 0 ? layer >= num_layers - n : layer < -n;
  if (!in_range) return false;
  if (modules.empty()) return true;
  const std::string within = name.substr(name.find("layers.") + 7 + std::to_string(layer).size() + 1);
  for (const std::string& module : modules)
    if (within.rfind(module + ".", 0) == 0 || within.find("." + module + ".") != std::string::npos) return true;
  return false;
}

}  // namespace

std::vector<TrainableParameter> select_trainable(const models::CausalLM& model, const TrainingArguments& args) {
  const std::string& method = args.finetuning_type;
  ZT_REQUIRE(method == "full" || method == "freeze",
             "--finetuning_type " + method + " selects its trainable parameters elsewhere");
  const std::int64_t num_layers = model.config().num_layers;
  ZT_REQUIRE(method != "freeze" || std::abs(args.freeze_trainable_layers) <= num_layers,
             "--freeze_trainable_layers " + std::to_string(args.freeze_trainable_layers) + " but the model has " +
                 std::to_string(num_layers) + " layers");
  std::vector<std::string> modules;
  if (args.freeze_trainable_modules != "all") modules = split_list(args.freeze_trainable_modules);
  std::vector<TrainableParameter> trainable;
  for (const auto& [name, variable] : model.named_parameters()) {
    const bool trains = method == "full" || freeze_trains(name, args, num_layers, modules);
    variable.set_requires_grad(trains);
    if (trains) trainable.push_back({name, variable, decays(name, variable.data())});
  }
  ZT_REQUIRE(!trainable.empty(), "--freeze_trainable_modules " + args.freeze_trainable_modules +
                                     " matches no parameter of the trainable layers; module names are the parts "
                                     "after 'layers.N.', e.g. mlp, self_attn (Qwen) or mlp, self_attention (ChatGLM)");
  return trainable;
}

}  // namespace zt::train
