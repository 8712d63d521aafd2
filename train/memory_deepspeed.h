// `zerotune estimate --deepspeed`: the memory settings a user's DeepSpeed config asks for,
// over the estimate's flags. The config goes through the trainer's own parser
// (train/deepspeed/), so what the trainer refuses is refused here with the same message: the
// ZeRO block (stage, optimizer offload, reduce_bucket_size, stage3_param_persistence_threshold,
// "auto" filled from the model's hidden size as HF fills it), and the precision and the
// micro-batch where the config sets them ("auto": the estimate's flags), or where its
// train_batch_size gives the micro-batch by DeepSpeed's batch rules over the estimate's GPUs.
// Nothing else of the config changes memory: the rest of the batch triple, optimizer and
// scheduler are checked when `zerotune train` runs it.
#pragma once

#include <string>
#include <vector>

#include "train/memory_estimate.h"

namespace zt::train {

// Which of the estimate's settings the user gave as flags: a flag and a config that set the
// same thing differently are an error, as they are for `zerotune train`.
struct GivenFlags {
  bool dtype = false;
  bool micro_batch = false;
};

struct DeepSpeedMemorySettings {
  MemorySettings settings;
  std::string source;  // the config's name in messages: its path, or "the deepspeed config in the arguments"
  std::vector<std::string> warnings = {};  // the parser's, as `zerotune train` would print them
};

// `path_or_json` as --deepspeed takes it: a ds_config.json path or the JSON object itself.
DeepSpeedMemorySettings memory_settings_from_deepspeed(const std::string& path_or_json, const MemorySettings& flags,
                                                       const GivenFlags& given, std::int64_t hidden_size);

}  // namespace zt::train
