// HF Trainer's "auto" rules for ds_config.json (transformers' integrations/deepspeed.py),
// applied to the JSON before DeepSpeed's own reading of it.
#include <cmath>

#include "runtime/error.h"
#include "train/deepspeed/deepspeed_config.h"

namespace zt::train {
namespace {

using nlohmann::json;

bool is_auto(const json& value) { return value.is_string() && value.get<std::string>() == "auto"; }

bool same_value(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) return a.get<double>() == b.get<double>();
  if (a.is_array() && b.is_array() && a.size() == b.size()) {
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!same_value(a[i], b[i])) return false;
    return true;
  }
  return a == b;
}

class AutoFiller {
 public:
  explicit AutoFiller(json& ds) : ds_(ds) {}

  // Sets `path` (dotted) to `value` when it says "auto"; when it holds something else and
  // must_match, records a mismatch with the flag `flag`. A missing key stays missing.
  void fill(const std::string& path, const json& value, const std::string& flag, bool must_match = true) {
    json* node = find(path);
    if (!node) return;
    if (is_auto(*node)) {
      *node = value;
    } else if (must_match && !same_value(*node, value)) {
      mismatches_.push_back("- ds " + path + "=" + node->dump() + " vs hf " + flag + "=" + value.dump());
    }
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
  std::vector<std::string> mismatches_;
};

// "auto" left anywhere after filling has no value to take.
void find_unfilled(const json& node, const std::string& path, std::vector<std::string>& out) {
  if (is_auto(node)) out.push_back(path);
  if (node.is_object())
    for (const auto& [key, child] : node.items()) find_unfilled(child, path.empty() ? key : path + "." + key, out);
}

}  // namespace

void fill_hf_auto(json& ds, const AutoFillContext& context, const std::string& source) {
  const TrainingArguments& args = context.args;
  AutoFiller filler(ds);
  const std::int64_t train_batch =
      args.per_device_train_batch_size * args.gradient_accumulation_steps * context.world_size;
  filler.fill("train_micro_batch_size_per_gpu", args.per_device_train_batch_size, "per_device_train_batch_size");
  filler.fill("gradient_accumulation_steps", args.gradient_accumulation_steps, "gradient_accumulation_steps");
  filler.fill("train_batch_size", train_batch,
              "train_batch_size (world_size * per_device_train_batch_size * gradient_accumulation_steps)");
  filler.fill("gradient_clipping", args.max_grad_norm, "max_grad_norm");
  filler.fill("optimizer.params.lr", args.learning_rate, "learning_rate");
  filler.fill("optimizer.params.betas", json::array({args.adam_beta1, args.adam_beta2}), "adam_beta1+adam_beta2");
  filler.fill("optimizer.params.eps", args.adam_epsilon, "adam_epsilon");
  filler.fill("optimizer.params.weight_decay", args.weight_decay, "weight_decay");
  filler.fill("scheduler.params.warmup_min_lr", 0, "warmup_min_lr", false);
  filler.fill("scheduler.params.warmup_max_lr", args.learning_rate, "learning_rate");
  filler.fill("scheduler.params.total_num_steps", context.total_steps, "num_training_steps (calculated)");
  filler.fill("scheduler.params.warmup_num_steps", context.warmup_steps, "warmup_steps");
  filler.fill("fp16.enabled", args.fp16, "fp16");
  filler.fill("bf16.enabled", args.bf16, "bf16");
  if (context.hidden_size > 0) {
    const std::int64_t h = context.hidden_size;
    filler.fill("zero_optimization.reduce_bucket_size", h * h, "hidden_size*hidden_size", false);
    filler.fill("zero_optimization.stage3_prefetch_bucket_size",
                static_cast<std::int64_t>(std::floor(0.9 * static_cast<double>(h * h))), "0.9*hidden_size*hidden_size",
                false);
    filler.fill("zero_optimization.stage3_param_persistence_threshold", 10 * h, "10*hidden_size", false);
  }
  if (!filler.mismatches().empty()) {
    std::string message = source +
                          ": please correct the following DeepSpeed config values that mismatch the "
                          "training arguments:";
    for (const std::string& line : filler.mismatches()) message += "\n" + line;
    fail(message + "\nThe easiest fix is to set these DeepSpeed config values to \"auto\".");
  }
  std::vector<std::string> unfilled;
  find_unfilled(ds, "", unfilled);
  if (!unfilled.empty()) {
    std::string keys;
    for (const std::string& key : unfilled) keys += (keys.empty() ? "" : ", ") + key;
    fail(source + ": \"auto\" has no value to take for " + keys + "; set a number there");
  }
}

}  // namespace zt::train
