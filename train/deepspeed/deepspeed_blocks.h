// The readers of a ds_config.json's blocks, one file each, called by parse_deepspeed_config
// (deepspeed_config.cpp). Private to train/deepspeed/.
#pragma once

#include <string>
#include <vector>

#include "train/deepspeed/config_block.h"
#include "train/deepspeed/deepspeed_config.h"

namespace zt::train {

// The DType of "fp32", "fp16" or "bf16" (the names DeepSpeed's dtype keys reduce to).
DType deepspeed_dtype(const std::string& named);

// zero_optimization, with its offload blocks and DeepSpeed's older forms (deepspeed_zero.cpp).
void read_zero(ConfigBlock& root, ZeroConfig& zero, std::vector<std::string>& warnings);

// fp16, and bf16 under either of its names (deepspeed_precision.cpp).
void read_precision(ConfigBlock& root, DeepSpeedConfig& config);

// optimizer and scheduler (deepspeed_optimizer.cpp, deepspeed_scheduler.cpp).
DeepSpeedOptimizer read_optimizer(ConfigBlock block, std::vector<std::string>& warnings);
LrScheduleConfig read_scheduler(ConfigBlock block, std::vector<std::string>& warnings);

// DeepSpeed's other top-level keys and sections (deepspeed_sections.h): silent when switched
// off or when they change nothing here, one warning each for a feature zerotune does not
// have, an error for one that would train otherwise; `config` holds the precision and the
// zero_optimization block already read, and takes data_types.grad_accum_dtype
// (deepspeed_features.cpp).
void read_other_features(ConfigBlock& root, DeepSpeedConfig& config, std::vector<std::string>& warnings);

}  // namespace zt::train
