// HF Trainer's "auto" rules for ds_config.json (transformers' integrations/deepspeed.py,
// trainer_config_process and trainer_config_finalize), applied to the JSON before DeepSpeed's
// own reading of it. "auto" left elsewhere is DeepSpeed's business: its config models drop
// it, leaving their default, and any other key refuses it (config_block.h).
#include "runtime/error.h"
#include "train/deepspeed/deepspeed_config.h"

namespace zt::train {
namespace {

using nlohmann::json;

bool is_auto(const json& value) { return value.is_string() && value.get<std::string>() == "auto"; }

// Python's ==, which HF's mismatch check uses: numbers and booleans compare by value
// (True == 1 == 1.0), lists item by item.
bool same_value(const json& a, const json& b) {
  auto numeric = [](const json& v) { return v.is_number() || v.is_boolean(); };
  auto number = [](const json& v) { return v.is_boolean() ? (v.get<bool>() ? 1.0 : 0.0) : v.get<double>(); };
  if (numeric(a) && numeric(b)) return number(a) == number(b);
  if (a.is_array() && b.is_array() && a.size() == b.size()) {
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!same_value(a[i], b[i])) return false;
    return true;
  }
  return a == b;
}

class AutoFiller {
 public:
  AutoFiller(json& ds, bool compare) : ds_(ds), compare_(compare) {}

  // Sets `path` (dotted) to `value` when it says "auto"; when it holds another value and
  // must_match, records a mismatch with the flag `flag`. A missing or null key stays as it is.
  void fill(const std::string& path, const json& value, const std::string& flag, bool must_match = true) {
    json* node = find(path);
    if (!node || node->is_null()) return;
    if (is_auto(*node)) {
      *node = value;
    } else if (compare_ && must_match && !same_value(*node, value)) {
      mismatches_.push_back("- ds " + path + "=" + node->dump() + " vs hf " + flag + "=" + value.dump());
    }
  }

  bool is_auto_at(const std::string& path) {
    json* node = find(path);
    return node && is_auto(*node);
  }

  const std::vector<std::string>& mismatches() const { return mismatches_; }

 private:
  json* find(const std::string& path) {
    json* node = &ds_;
    std::size_t start = 0;
    while (true) {
      std::size_t dot = path.find('.', start);
      std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (!node->is_object() || !node->contains(key)) return nullptr;
      node = &(*node)[key];
      if (dot == std::string::npos) return node;
      start = dot + 1;
    }
  }

  json& ds_;
  bool compare_;  // whether a set value is compared with its flag
  std::vector<std::string> mismatches_;
};

// trainer_config_finalize's keys that follow the model's hidden size: reduce_bucket_size
// always, the other two under ZeRO-3 only (elsewhere their "auto" is left to DeepSpeed).
void fill_hidden_size_keys(AutoFiller& filler, const json& ds, std::int64_t hidden_size, const std::string& source) {
  std::string autos;
  for (const char* key : {"zero_optimization.reduce_bucket_size", "zero_optimization.stage3_prefetch_bucket_size",
                          "zero_optimization.stage3_param_persistence_threshold"})
    if (filler.is_auto_at(key)) autos += (autos.empty() ? "" : ", ") + std::string(key);
  if (autos.empty()) return;
  ZT_REQUIRE(hidden_size > 0, source + ": the model's config has no hidden_size, so \"auto\" in " + autos +
                                  " has no value to take; set a whole number there");
  const std::int64_t h = hidden_size;
  filler.fill("zero_optimization.reduce_bucket_size", h * h, "hidden_size*hidden_size", false);
  const json* zero = ds.contains("zero_optimization") ? &ds.at("zero_optimization") : nullptr;
  const bool zero3 = zero && zero->is_object() && zero->contains("stage") && same_value(zero->at("stage"), 3);
  if (!zero3) return;
  // int(0.9 * hidden_size * hidden_size), evaluated as Python does.
  const auto prefetch = static_cast<std::int64_t>(0.9 * static_cast<double>(h) * static_cast<double>(h));
  filler.fill("zero_optimization.stage3_prefetch_bucket_size", prefetch, "0.9*hidden_size*hidden_size", false);
  filler.fill("zero_optimization.stage3_param_persistence_threshold", 10 * h, "10*hidden_size", false);
}

}  // namespace

void fill_hf_auto(json& ds, const AutoFillContext& context, const std::string& source) {
  const OptimizerConfig& adam = context.optimizer;
  AutoFiller filler(ds, context.compare_with_flags);
  const std::int64_t train_batch =
      context.per_device_train_batch_size * context.gradient_accumulation_steps * context.world_size;
  filler.fill("train_micro_batch_size_per_gpu", context.per_device_train_batch_size, "per_device_train_batch_size");
  filler.fill("gradient_accumulation_steps", context.gradient_accumulation_steps, "gradient_accumulation_steps");
  filler.fill("train_batch_size", train_batch,
              "train_batch_size (world_size * per_device_train_batch_size * gradient_accumulation_steps)");
  filler.fill("gradient_clipping", context.max_grad_norm, "max_grad_norm");
  filler.fill("optimizer.params.lr", context.learning_rate, "learning_rate");
  filler.fill("optimizer.params.betas", json::array({adam.beta1, adam.beta2}), "adam_beta1+adam_beta2");
  filler.fill("optimizer.params.eps", adam.eps, "adam_epsilon");
  filler.fill("optimizer.params.weight_decay", adam.weight_decay, "weight_decay");
  filler.fill("scheduler.params.warmup_min_lr", 0, "warmup_min_lr", false);
  filler.fill("scheduler.params.warmup_max_lr", context.learning_rate, "learning_rate");
  filler.fill("fp16.enabled", context.fp16, "fp16");
  filler.fill("bf16.enabled", context.bf16, "bf16");
  fill_hidden_size_keys(filler, ds, context.hidden_size, source);
  filler.fill("scheduler.params.total_num_steps", context.total_steps, "num_training_steps (calculated)");
  filler.fill("scheduler.params.warmup_num_steps", context.warmup_steps, "warmup_steps");
  if (!filler.mismatches().empty()) {
    std::string message = source +
                          ": please correct the following DeepSpeed config values that mismatch the "
                          "training arguments:";
    for (const std::string& line : filler.mismatches()) message += "\n" + line;
    fail(message + "\nThe easiest fix is to set these DeepSpeed config values to \"auto\".");
  }
}

}  // namespace zt::train
