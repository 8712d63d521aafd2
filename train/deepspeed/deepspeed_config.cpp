#include "train/deepspeed/deepspeed_config.h"

#include <algorithm>
#include <fstream>

#include "runtime/error.h"
#include "train/deepspeed/config_block.h"

namespace zt::train {
namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// DeepSpeed's rules (runtime/config.py): infer the missing member of
// train_batch_size = micro_batch_per_gpu * gradient_accumulation_steps * world_size.
void resolve_batch(ConfigBlock& root, int world_size, DeepSpeedConfig& config) {
  auto tb = root.find<std::int64_t>("train_batch_size");
  auto mb = root.find<std::int64_t>("train_micro_batch_size_per_gpu");
  auto gas = root.find<std::int64_t>("gradient_accumulation_steps");
  const std::int64_t ws = world_size;
  ZT_REQUIRE(tb || mb, root.where("") + "either train_batch_size or train_micro_batch_size_per_gpu must be set");
  if (tb && mb && !gas) gas = *tb / *mb / ws, config.inferred.push_back("gradient_accumulation_steps");
  if (tb && gas && !mb) mb = *tb / ws / *gas, config.inferred.push_back("train_micro_batch_size_per_gpu");
  if (mb && gas && !tb) tb = *mb * *gas * ws, config.inferred.push_back("train_batch_size");
  if (tb && !mb && !gas) {
    gas = 1, mb = *tb / ws;
    config.inferred.insert(config.inferred.end(), {"gradient_accumulation_steps", "train_micro_batch_size_per_gpu"});
  }
  if (mb && !tb && !gas) {
    gas = 1, tb = *mb * ws;
    config.inferred.insert(config.inferred.end(), {"gradient_accumulation_steps", "train_batch_size"});
  }
  auto describe = [&](const char* name, std::int64_t value) {
    bool was_inferred = std::find(config.inferred.begin(), config.inferred.end(), name) != config.inferred.end();
    return std::string(name) + " " + std::to_string(value) + (was_inferred ? " (inferred)" : "");
  };
  const std::string numbers = describe("train_batch_size", *tb) + ", " +
                              describe("train_micro_batch_size_per_gpu", *mb) + ", " +
                              describe("gradient_accumulation_steps", *gas) + ", world_size " + std::to_string(ws);
  ZT_REQUIRE(*tb > 0 && *mb > 0 && *gas > 0, root.where("") + "the batch sizes must all be > 0: " + numbers);
  ZT_REQUIRE(*tb == *mb * *gas * ws, root.where("") +
                                         "train_batch_size is not equal to micro_batch_per_gpu * "
                                         "gradient_acc_step * world_size: " +
                                         numbers + " (" + std::to_string(*mb) + " * " + std::to_string(*gas) + " * " +
                                         std::to_string(ws) + " = " + std::to_string(*mb * *gas * ws) + ")");
  config.train_batch_size = *tb, config.micro_batch_per_gpu = *mb, config.gradient_accumulation_steps = *gas;
}

OptimizerConfig read_optimizer(ConfigBlock block, std::vector<std::string>& warnings) {
  const std::string type = block.get<std::string>("type", "");
  ZT_REQUIRE(lower(type) == "adam" || lower(type) == "adamw",
             block.where("type") + " '" + type + "' is not supported; use Adam or AdamW");
  ConfigBlock params = block.child("params");
  OptimizerConfig optimizer;
  optimizer.lr = params.get("lr", optimizer.lr);
  if (auto betas = params.find<std::vector<double>>("betas")) {
    ZT_REQUIRE(betas->size() == 2, params.where("betas") + " must hold two numbers");
    optimizer.beta1 = (*betas)[0], optimizer.beta2 = (*betas)[1];
  }
  optimizer.eps = params.get("eps", optimizer.eps);
  optimizer.weight_decay = params.get("weight_decay", optimizer.weight_decay);
  optimizer.decoupled_weight_decay = lower(type) == "adamw" || params.get("adam_w_mode", true);
  ZT_REQUIRE(params.get("bias_correction", true), params.where("bias_correction") + " false is not supported");
  ZT_REQUIRE(!params.get("amsgrad", false), params.where("amsgrad") + " true is not supported");
  params.ignore("torch_adam", "chooses DeepSpeed's implementation", warnings);
  params.warn_unused(warnings);
  block.warn_unused(warnings);
  return optimizer;
}

LrScheduleConfig read_scheduler(ConfigBlock block, std::vector<std::string>& warnings) {
  LrScheduleConfig schedule;
  schedule.kind = deepspeed_schedule_kind(block.get<std::string>("type", ""));
  ConfigBlock params = block.child("params");
  schedule.warmup_steps = params.get<std::int64_t>("warmup_num_steps", 1000);
  schedule.warmup_log = params.get<std::string>("warmup_type", "log") == "log";
  if (schedule.kind == ScheduleKind::kWarmupCosineLR) {
    schedule.warmup_min_ratio = params.get("warmup_min_ratio", 0.0);
    schedule.cos_min_ratio = params.get("cos_min_ratio", 1e-4);
  } else {
    schedule.warmup_min_lr = params.get("warmup_min_lr", 0.0);
    schedule.peak_lr = params.get("warmup_max_lr", 1e-3);
  }
  if (schedule.kind != ScheduleKind::kWarmupLR) {
    auto total = params.find<std::int64_t>("total_num_steps");
    ZT_REQUIRE(total, params.where("total_num_steps") + " is required by " + block.get<std::string>("type", ""));
    schedule.total_steps = *total;
  }
  params.ignore("last_batch_iteration", "is set by resuming", warnings);
  params.warn_unused(warnings);
  block.warn_unused(warnings);
  return schedule;
}

void read_fp16(ConfigBlock block, DeepSpeedConfig& config) {
  config.fp16 = block.get("enabled", false);
  LossScalerConfig& scaler = config.loss_scaler;
  scaler.static_scale = block.get("loss_scale", 0.0);
  scaler.initial_scale_power = block.get("initial_scale_power", scaler.initial_scale_power);
  scaler.loss_scale_window = block.get("loss_scale_window", scaler.loss_scale_window);
  scaler.hysteresis = block.get("hysteresis", scaler.hysteresis);
  scaler.consecutive_hysteresis = block.get("consecutive_hysteresis", scaler.consecutive_hysteresis);
  scaler.min_loss_scale = block.get("min_loss_scale", scaler.min_loss_scale);
  const bool tuned = block.has("initial_scale_power") || block.has("loss_scale_window") || block.has("hysteresis") ||
                     block.has("min_loss_scale");
  if (config.fp16 && scaler.static_scale == 0.0 && !tuned)
    config.warnings.push_back(block.where("") +
                              " sets none of initial_scale_power, loss_scale_window, hysteresis, "
                              "min_loss_scale: using the documented defaults (2^16, 1000, 2, 1), not the 2^32 "
                              "start DeepSpeed's ZeRO path would silently take");
  block.ignore("auto_cast", "is not supported (the model runs in fp16 throughout)", config.warnings);
  block.ignore("fp16_master_weights_and_grads", "is not supported (master weights are fp32)", config.warnings);
  block.warn_unused(config.warnings);
}

// zerotune always reduces gradients in fp32 (DeepSpeed's communication_data_type "fp32"), so
// a bf16 run keeps fp32 reduction; a 16-bit request is honoured in spirit, not in bytes.
void read_communication_data_type(ConfigBlock& root, std::vector<std::string>& warnings) {
  const std::string type = root.get<std::string>("communication_data_type", "fp32");
  ZT_REQUIRE(type == "fp32" || type == "fp16" || type == "bf16",
             root.where("communication_data_type") + " '" + type + "' is not one of fp32, fp16, bf16");
  if (type != "fp32")
    warnings.push_back(root.where("communication_data_type") + " " + type +
                       ": zerotune reduces gradients in fp32 (more accurate, twice the traffic of " + type + ")");
}

}  // namespace

void read_zero(ConfigBlock block, ZeroConfig& zero, std::vector<std::string>& warnings);

DeepSpeedConfig parse_deepspeed_config(const nlohmann::json& ds, int world_size, const std::string& source) {
  ConfigBlock root(ds, "", source);
  DeepSpeedConfig config;
  resolve_batch(root, world_size, config);
  config.gradient_clipping = root.get("gradient_clipping", 0.0);
  ZT_REQUIRE(config.gradient_clipping >= 0.0, root.where("gradient_clipping") + " must be >= 0");
  if (root.has("optimizer")) config.optimizer = read_optimizer(root.child("optimizer"), config.warnings);
  if (root.has("scheduler")) config.scheduler = read_scheduler(root.child("scheduler"), config.warnings);
  read_fp16(root.child("fp16"), config);
  const char* bf16_key = root.has("bfloat16") ? "bfloat16" : "bf16";
  {
    ConfigBlock bf16 = root.child(bf16_key);
    config.bf16 = bf16.get("enabled", false);
    bf16.ignore("immediate_grad_update", "does not apply (gradients accumulate in fp32)", config.warnings);
    bf16.warn_unused(config.warnings);
  }
  ZT_REQUIRE(!(config.fp16 && config.bf16), source + ": fp16 and " + bf16_key + " are both enabled; enable one");
  read_zero(root.child("zero_optimization"), config.zero, config.warnings);
  config.steps_per_print = root.find<std::int64_t>("steps_per_print");
  read_communication_data_type(root, config.warnings);
  for (const char* key : {"zero_allow_untested_optimizer", "zero_force_ds_cpu_optimizer"})
    root.ignore(key, "does not apply (zerotune's optimizers are its own)", config.warnings);
  root.ignore("wall_clock_breakdown", "is not supported (zerotune logs step times itself)", config.warnings);
  root.ignore("activation_checkpointing", "is not used; pass --gradient_checkpointing", config.warnings);
  root.warn_unused(config.warnings);
  return config;
}

DeepSpeedConfig load_deepspeed_config(const std::string& path, const AutoFillContext& context) {
  std::ifstream in(path);
  ZT_REQUIRE(in, "cannot read the DeepSpeed config " + path + " (--deepspeed): check the path");
  nlohmann::json ds = nlohmann::json::parse(in, nullptr, false);
  ZT_REQUIRE(!ds.is_discarded(), path + " is not valid JSON");
  fill_hf_auto(ds, context, path);
  return parse_deepspeed_config(ds, context.world_size, path);
}

}  // namespace zt::train
