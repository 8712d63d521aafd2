#include "train/memory_deepspeed.h"

#include <optional>

#include "runtime/error.h"
#include "runtime/usage_error.h"
#include "train/deepspeed/deepspeed_config.h"

namespace zt::train {
namespace {

// The working dtype the config decides: fp16 or bf16 enabled, or both set disabled (float32).
// nullopt where it leaves the precision to the flags.
std::optional<DType> config_dtype(const DeepSpeedConfig& config) {
  if (config.fp16) return DType::kF16;
  if (config.bf16) return DType::kBF16;
  if (config.precision_set) return DType::kF32;
  return std::nullopt;
}

}  // namespace

DeepSpeedMemorySettings memory_settings_from_deepspeed(const std::string& path_or_json, const MemorySettings& flags,
                                                       const GivenFlags& given, std::int64_t hidden_size) {
  // Read as `zerotune train` reads it (the same errors, usage errors for what the config says).
  const DeepSpeedInput input = read_deepspeed_input(path_or_json);
  const std::string& source = input.source;
  DeepSpeedMemorySettings out{flags, source};
  MemorySettings& s = out.settings;

  // Every key is judged as `zerotune train` judges it; the values HF compares with training
  // flags are checked when `zerotune train` runs the config. An "auto" (or absent) micro-batch
  // is --micro_batch's, an "auto" precision --dtype's.
  const DeepSpeedConfig parsed = parse_deepspeed_without_flags(input.json, hidden_size, source,
                                                               {.micro_batch = flags.micro_batch,
                                                                .micro_batch_given = given.micro_batch,
                                                                .world_size = flags.world_size(),
                                                                .fp16 = flags.dtype == DType::kF16,
                                                                .bf16 = flags.dtype == DType::kBF16});
  if (const std::optional<DType> dtype = config_dtype(parsed)) {
    ZT_REQUIRE_USAGE(!given.dtype || *dtype == flags.dtype, source + " trains in " + dtype_name(*dtype) +
                                                                " but --dtype is " + dtype_name(flags.dtype) +
                                                                ": drop --dtype or change the config");
    s.dtype = *dtype;
  }
  ZT_REQUIRE_USAGE(!given.micro_batch || parsed.micro_batch_per_gpu == flags.micro_batch,
                   source + " sets train_micro_batch_size_per_gpu " + std::to_string(parsed.micro_batch_per_gpu) +
                       " but --micro_batch is " + std::to_string(flags.micro_batch) +
                       ": drop --micro_batch or set the config's to \"auto\"");
  s.micro_batch = parsed.micro_batch_per_gpu;

  s.stage = parsed.zero.stage;
  s.offload = parsed.zero.offload_optimizer;
  s.offload_ratio = parsed.zero.offload_ratio;
  s.offload_param = parsed.zero.offload_param;
  s.reduce_bucket_size = parsed.zero.reduce_bucket_size;
  s.grad_accum_dtype = parsed.zero.grad_accum_dtype;
  s.persistence_threshold = parsed.zero.stage3_param_persistence_threshold;
  out.warnings = parsed.warnings;
  return out;
}

}  // namespace zt::train
