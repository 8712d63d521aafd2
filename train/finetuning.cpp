#include "train/finetuning.h"

#include <cstdio>
#include <memory>
#include <sstream>

#include "runtime/error.h"
#include "runtime/terminal/text_list.h"
#include "runtime/usage_error.h"
#include "train/args/base_quantization.h"

namespace zt::train {
namespace {

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

std::vector<TrainableParameter> select_lora(models::CausalLM& model, const TrainingArguments& args) {
  for (const auto& p : model.named_parameters()) p.variable.set_requires_grad(false);
  models::attach_lora(model, lora_config(args, model.config()), static_cast<std::uint64_t>(args.seed));
  std::vector<TrainableParameter> trainable;
  for (const auto& [name, variable] : models::lora_parameters(model))
    trainable.push_back({name, variable, decays(name, variable.data())});
  return trainable;
}

// Every base parameter frozen; a fresh prefix encoder, initialised from --seed (the same on
// every rank), attached to the model and trained.
std::vector<TrainableParameter> select_ptuning(models::CausalLM& model, const TrainingArguments& args) {
  for (const auto& p : model.named_parameters()) p.variable.set_requires_grad(false);
  auto encoder =
      std::make_shared<models::PrefixEncoder>(model.config(), prefix_config(args), model.device(), model.dtype());
  Generator generator(static_cast<std::uint64_t>(args.seed));
  encoder->init_weights(generator);
  models::attach_prefix_encoder(model, encoder);
  std::vector<TrainableParameter> trainable;
  for (const auto& [name, variable] : encoder->named_parameters())
    trainable.push_back({name, variable, decays(name, variable.data())});
  return trainable;
}

// 1234567 -> "1,234,567".
std::string with_thousands(std::int64_t value) {
  const std::string digits = std::to_string(value);
  std::string text;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) text += ',';
    text += digits[i];
  }
  return text;
}

}  // namespace

models::LoraConfig lora_config(const TrainingArguments& args, const models::ModelConfig& config) {
  models::LoraConfig lora;
  lora.rank = args.lora_rank;
  lora.alpha = args.lora_alpha.value_or(2.0 * static_cast<double>(args.lora_rank));
  lora.dropout = args.lora_dropout;
  lora.target_modules = models::parse_lora_target(args.lora_target, config);
  lora.base_model_name_or_path = args.model_name_or_path;
  return lora;
}

models::PrefixConfig prefix_config(const TrainingArguments& args) {
  return {.pre_seq_len = args.pre_seq_len, .prefix_projection = args.prefix_projection};
}

std::string finetuning_description(const TrainingArguments& args) {
  std::ostringstream text;
  switch (args.finetuning_type) {
    case FinetuningType::kLora:
      text << "LoRA rank " << args.lora_rank << ", alpha "
           << args.lora_alpha.value_or(2.0 * static_cast<double>(args.lora_rank)) << ", on "
           << (args.lora_target == "all" ? std::string("all linear modules") : args.lora_target);
      break;
    case FinetuningType::kFull:
      text << "full fine-tuning";
      break;
    case FinetuningType::kFreeze:
      text << "freeze: " << (args.freeze_trainable_layers > 0 ? "last " : "first ")
           << std::abs(args.freeze_trainable_layers) << " layers train";
      break;
    case FinetuningType::kPtuning:
      text << "P-Tuning v2, a prefix of " << args.pre_seq_len << " tokens";
      break;
  }
  if (const std::optional<BaseQuantization> base = base_quantization(args))
    text << ", on a 4-bit base (" << base->quant_type << (base->double_quant ? ", double quantization" : "") << ")";
  if (!args.method_implied_by.empty())
    text << " (implied by " << args.method_implied_by << "; --finetuning_type lora trains LoRA)";
  else if (!args.was_given("finetuning_type") && !args.use_lora)
    text << " (--finetuning_type lora is the default, as in LLaMA-Factory; --finetuning_type full trains every "
            "parameter)";
  return text.str();
}

std::string trainable_summary(const models::CausalLM& model, const std::vector<TrainableParameter>& trainable) {
  std::int64_t trained = 0, added = 0;
  for (const TrainableParameter& p : trainable) {
    trained += p.variable.data().numel();
    if (!model.has_parameter(p.name)) added += p.variable.data().numel();
  }
  const std::int64_t all = model.num_parameters() + added;
  char share[32];
  std::snprintf(share, sizeof share, "%.4f",
                all > 0 ? 100.0 * static_cast<double>(trained) / static_cast<double>(all) : 0.0);
  return "trainable params: " + with_thousands(trained) + " || all params: " + with_thousands(all) +
         " || trainable%: " + share;
}

std::vector<TrainableParameter> select_trainable(models::CausalLM& model, const TrainingArguments& args) {
  const FinetuningType method = args.finetuning_type;
  if (method == FinetuningType::kLora) return select_lora(model, args);
  if (method == FinetuningType::kPtuning) return select_ptuning(model, args);
  const std::int64_t num_layers = model.config().num_layers;
  // Flags the model cannot satisfy are problems with the arguments: usage errors (exit code 2).
  ZT_REQUIRE_USAGE(method != FinetuningType::kFreeze || std::abs(args.freeze_trainable_layers) <= num_layers,
                   "--freeze_trainable_layers " + std::to_string(args.freeze_trainable_layers) + " but the model has " +
                       std::to_string(num_layers) + " layers");
  std::vector<std::string> modules;
  if (args.freeze_trainable_modules != "all") modules = split_comma_list(args.freeze_trainable_modules);
  std::vector<TrainableParameter> trainable;
  for (const auto& [name, variable] : model.named_parameters()) {
    const bool trains = method == FinetuningType::kFull || freeze_trains(name, args, num_layers, modules);
    variable.set_requires_grad(trains);
    if (trains) trainable.push_back({name, variable, decays(name, variable.data())});
  }
  ZT_REQUIRE_USAGE(!trainable.empty(),
                   "--freeze_trainable_modules " + args.freeze_trainable_modules +
                       " matches no parameter of the trainable layers; module names are the parts "
                       "after 'layers.N.', e.g. mlp, self_attn (Qwen) or mlp, self_attention (ChatGLM)");
  return trainable;
}

}  // namespace zt::train
