// The fp16 and bf16 blocks as DeepSpeed's DeepSpeedFP16Config and DeepSpeedBF16Config models
// read them (runtime/precision_config.py), bf16 also under its older name bfloat16.
#include <cmath>
#include <utility>

#include "train/deepspeed/deepspeed_blocks.h"

namespace zt::train {
namespace {

void read_fp16(ConfigBlock block, DeepSpeedConfig& config) {
  config.fp16 = block.get("enabled", false);
  LossScalerConfig& scaler = config.loss_scaler;
  scaler.static_scale = block.get("loss_scale", 0.0);
  ZT_REQUIRE(std::isfinite(scaler.static_scale) && scaler.static_scale >= 0.0,
             block.where("loss_scale") + " must be a finite number >= 0 (0 scales dynamically)");
  scaler.initial_scale_power = block.get("initial_scale_power", scaler.initial_scale_power);
  scaler.loss_scale_window = block.get("loss_scale_window", scaler.loss_scale_window);
  scaler.hysteresis = block.get("hysteresis", scaler.hysteresis);
  scaler.consecutive_hysteresis = block.get("consecutive_hysteresis", scaler.consecutive_hysteresis);
  scaler.min_loss_scale = static_cast<double>(block.get<std::int64_t>("min_loss_scale", 1));
  if (config.fp16 && scaler.static_scale == 0.0) {
    ZT_REQUIRE(scaler.loss_scale_window > 0,
               block.where("loss_scale_window") + " must be > 0 with dynamic loss scaling");
    ZT_REQUIRE(scaler.min_loss_scale > 0, block.where("min_loss_scale") + " must be > 0 with dynamic loss scaling");
  }
  const bool tuned = block.has("initial_scale_power") || block.has("loss_scale_window") || block.has("hysteresis") ||
                     block.has("min_loss_scale");
  if (config.fp16 && scaler.static_scale == 0.0 && !tuned)
    config.warnings.push_back(block.where("") +
                              " sets none of initial_scale_power, loss_scale_window, hysteresis, "
                              "min_loss_scale: using the documented defaults (2^16, 1000, 2, 1), not the 2^32 "
                              "start DeepSpeed's ZeRO path would silently take");
  block.ignore_unless("auto_cast", false, "is not supported (the model runs in fp16 throughout)", config.warnings);
  block.ignore_unless("fp16_master_weights_and_grads", false, "is not supported (master weights are fp32)",
                      config.warnings);
  block.refuse_unknown("DeepSpeed's fp16 block");
}

bool read_bf16(ConfigBlock block, std::vector<std::string>& warnings) {
  const bool enabled = block.get("enabled", false);
  block.ignore_unless("immediate_grad_update", false, "does not apply (gradients accumulate in fp32)", warnings);
  block.ignore_unless("check_grad_overflow", true,
                      "is not supported: zerotune never applies a gradient that is not finite", warnings);
  block.ignore_unless("bf16_master_weights_and_grads", false,
                      "is not supported (master weights and their gradients are fp32)", warnings);
  block.ignore_unless("bf16_optimizer_states", false, "is not supported (Adam's moments are fp32)", warnings);
  block.refuse_unknown("DeepSpeed's bf16 block");
  return enabled;
}

}  // namespace

void read_precision(ConfigBlock& root, DeepSpeedConfig& config) {
  ConfigBlock fp16 = root.child("fp16", BlockKind::kModel);
  const bool fp16_set = fp16.has("enabled");
  read_fp16(std::move(fp16), config);
  // DeepSpeed reads "bf16", and "bfloat16" only when there is no "bf16".
  const nlohmann::json* bf16 = root.value_of("bf16");
  const nlohmann::json* bfloat16 = root.value_of("bfloat16");
  ZT_REQUIRE(!bf16 || !bfloat16 || *bf16 == *bfloat16,
             root.where("bf16") + " and bfloat16 (its older name) are both given and differ; keep bf16 only");
  const char* name = bf16 || !bfloat16 ? "bf16" : "bfloat16";
  if (bf16 && bfloat16) root.accept_any("bfloat16");  // equal to bf16, read as it
  ConfigBlock bf16_block = root.child(name, BlockKind::kModel);
  config.precision_set = fp16_set && bf16_block.has("enabled");
  config.bf16 = read_bf16(std::move(bf16_block), config.warnings);
  ZT_REQUIRE(!(config.fp16 && config.bf16),
             root.where("") + ": fp16 and " + name + " are both enabled; enable one (DeepSpeed refuses both)");
}

}  // namespace zt::train
