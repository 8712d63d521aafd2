// The zero_optimization block as DeepSpeed's DeepSpeedZeroConfig model reads it
// (runtime/zero/config.py, offload_config.py): its defaults and ranges, the fields it takes
// under two names, its deprecated names, and its refusal of unknown keys. The ZeRO code in
// train/zero/ honours what is read here.
#include <algorithm>
#include <limits>

#include "train/deepspeed/deepspeed_blocks.h"

namespace zt::train {
namespace {

constexpr BlockKind kModel = BlockKind::kModel;

// A deprecated field: DeepSpeed warns, and refuses it beside the field that replaced it.
bool deprecated_present(ConfigBlock& block, const std::string& old_name, bool replacement_given,
                        const std::string& replacement, std::vector<std::string>& warnings) {
  if (!block.has(old_name)) return false;
  ZT_REQUIRE(!replacement_given, block.where(old_name) + " is the deprecated name of " + block.path_of(replacement) +
                                     ", which is given too; keep " + replacement + " only");
  warnings.push_back(block.where(old_name) + " is deprecated; use " + replacement + " (read as DeepSpeed reads it)");
  return true;
}

void read_offload_optimizer(ConfigBlock block, ZeroConfig& zero, std::vector<std::string>& warnings) {
  const std::string device = block.get<std::string>("device", "none");
  ZT_REQUIRE(device == "none" || device == "cpu" || device == "nvme",
             block.where("device") + " '" + device + "' is not one of none, cpu, nvme");
  ZT_REQUIRE(device != "nvme", block.where("device") + " 'nvme' is not supported; use cpu or none");
  zero.offload_optimizer = device == "cpu";
  zero.offload_pin_memory = block.get("pin_memory", zero.offload_pin_memory);
  // Partial offload (ZeRO-Offload++): DeepSpeed takes it under stage 3, zerotune at stages 1-3.
  zero.offload_ratio = block.get("ratio", 1.0);
  ZT_REQUIRE(zero.offload_ratio >= 0.0 && zero.offload_ratio <= 1.0,
             block.where("ratio") + " must be in [0, 1] (DeepSpeed's range)");
  // DeepSpeed's share of the cores for its CPU Adam; unset, zerotune takes every core given
  // to the rank (ops/optim/cpu_adam.h), which DeepSpeed's default of 0.8 would not.
  if (block.has("cpuadam_cores_perc")) {
    const double cores = block.get("cpuadam_cores_perc", 0.8);
    ZT_REQUIRE(cores > 0.0 && cores <= 1.0,
               block.where("cpuadam_cores_perc") + " must be in (0, 1]: the share of the rank's cores");
    zero.offload_cpu_cores_share = cores;
  }
  block.accept<std::string>("nvme_path");
  block.get_at_least<std::int64_t>("buffer_count", 4, 0);
  for (const char* key : {"pipeline_read", "pipeline_write", "fast_init"}) block.accept<bool>(key);
  // DeepSpeed's NVMe swapping settings; offloading to host memory has no swap buffers.
  for (const char* key : {"nvme_path", "buffer_count", "pipeline_read", "pipeline_write", "fast_init"})
    if (zero.offload_optimizer && block.has(key))
      warnings.push_back(block.where(key) +
                         " applies to NVMe offload only: with device cpu the optimizer state lives in host memory "
                         "whole; ignored");
  block.ignore_unless("super_offload", false, "is not supported (the CPU Adam is zerotune's own)", warnings);
  block.refuse_unknown("DeepSpeed's offload_optimizer block");
}

// Parameter offload under stage 3 keeps each rank's shard of the weights in host memory
// (train/zero/zero3_partitioner.h, Parameter offload); below stage 3 DeepSpeed offloads no
// parameters.
void apply_param_offload(const std::string& device, const std::string& where, ZeroConfig& zero,
                         std::vector<std::string>& warnings) {
  ZT_REQUIRE(device == "none" || device == "cpu" || device == "nvme",
             where + " '" + device + "' is not one of none, cpu, nvme");
  if (device == "none") return;
  if (zero.stage < 3) {
    warnings.push_back(where + " " + device + " offloads parameters under ZeRO stage 3 only (the stage is " +
                       std::to_string(zero.stage) + "); ignored");
    return;
  }
  ZT_REQUIRE(device != "nvme", where +
                                   " 'nvme' is not supported: zerotune offloads parameters to host memory only; "
                                   "write \"device\": \"cpu\"");
  zero.offload_param = true;
}

void read_offload_param(ConfigBlock block, ZeroConfig& zero, std::vector<std::string>& warnings) {
  apply_param_offload(block.get<std::string>("device", "none"), block.where("device"), zero, warnings);
  zero.offload_param_pin_memory = block.get("pin_memory", zero.offload_param_pin_memory);
  block.accept<std::string>("nvme_path");
  block.get_at_least<std::int64_t>("buffer_count", 5, 0);
  block.get_at_least<std::int64_t>("buffer_size", 100'000'000, 0);
  block.get_at_least<std::int64_t>("max_in_cpu", 1'000'000'000, 0);
  // DeepSpeed sizes its NVMe swap buffers with these; offloading to host memory has none.
  for (const char* key : {"buffer_count", "buffer_size", "max_in_cpu"})
    if (zero.offload_param && block.has(key))
      warnings.push_back(block.where(key) +
                         " applies to NVMe offload only: with device cpu zerotune keeps the rank's whole shard in host "
                         "memory and copies one module at a time to the device (stage3_prefetch_bucket_size ahead); "
                         "ignored");
  block.refuse_unknown("DeepSpeed's offload_param block");
}

// The offload blocks (an absent one reads as empty), or their deprecated booleans cpu_offload
// and cpu_offload_param.
void read_offload(ConfigBlock& block, ZeroConfig& zero, std::vector<std::string>& warnings) {
  const bool optimizer_block = block.has("offload_optimizer");
  const bool param_block = block.has("offload_param");
  read_offload_optimizer(block.child("offload_optimizer", kModel), zero, warnings);
  read_offload_param(block.child("offload_param", kModel), zero, warnings);
  if (deprecated_present(block, "cpu_offload", optimizer_block, "offload_optimizer", warnings) &&
      block.get("cpu_offload", false))
    zero.offload_optimizer = true;
  // DeepSpeed offloads the partitioned optimizer state: there is none to offload at stage 0.
  ZT_REQUIRE(!zero.offload_optimizer || zero.stage >= 1,
             block.where(optimizer_block ? "offload_optimizer" : "cpu_offload") +
                 " offloads the optimizer, which needs ZeRO stage 1, 2 or 3 (stage is 0)");
  if (deprecated_present(block, "cpu_offload_param", param_block, "offload_param", warnings) &&
      block.get("cpu_offload_param", false))
    apply_param_offload("cpu", block.where("cpu_offload_param"), zero, warnings);
  for (const char* key : {"cpu_offload", "cpu_offload_param"}) block.accept<bool>(key);
  block.ignore("cpu_offload_use_pin_memory",
               "is deprecated and DeepSpeed no longer reads it; use offload_optimizer.pin_memory", warnings);
}

// DeepSpeed's stage-3 fields, each under its own name and its "stage3_" alias, all >= 0.
void read_stage3(ConfigBlock& block, ZeroConfig& zero, std::vector<std::string>& warnings) {
  auto count = [&](const std::string& name, std::int64_t fallback) {
    const std::string alias = "stage3_" + name;
    std::optional<std::int64_t> value = block.find_either<std::int64_t>(name, alias);
    ZT_REQUIRE(!value || *value >= 0, block.where(block.has(name) ? name : alias) +
                                          " must be >= 0 (DeepSpeed's range), got " + std::to_string(*value));
    return value.value_or(fallback);
  };
  zero.stage3_prefetch_bucket_size = count("prefetch_bucket_size", zero.stage3_prefetch_bucket_size);
  zero.stage3_param_persistence_threshold =
      count("param_persistence_threshold", zero.stage3_param_persistence_threshold);
  zero.stage3_max_live_parameters = count("max_live_parameters", zero.stage3_max_live_parameters);
  zero.stage3_max_reuse_distance = count("max_reuse_distance", zero.stage3_max_reuse_distance);
  constexpr std::int64_t kNoCap = std::numeric_limits<std::int64_t>::max();  // DeepSpeed's sys.maxsize
  if (count("model_persistence_threshold", kNoCap) != kNoCap)
    warnings.push_back(block.where(block.has("model_persistence_threshold") ? "model_persistence_threshold"
                                                                            : "stage3_model_persistence_threshold") +
                       " is not supported: every parameter under the persistence threshold stays whole; ignored");
  block.find_either<std::int64_t>("module_granularity_threshold", "stage3_module_granularity_threshold");
  block.find_either<bool>("use_all_reduce_for_fetch_params", "stage3_use_all_reduce_for_fetch_params");
  block.find_either<bool>("allgather_sequential", "stage3_allgather_sequential");

  std::optional<bool> gather =
      block.find_either<bool>("gather_16bit_weights_on_model_save", "stage3_gather_16bit_weights_on_model_save");
  if (deprecated_present(block, "stage3_gather_fp16_weights_on_model_save", gather.has_value(),
                         "gather_16bit_weights_on_model_save", warnings))
    gather = block.find<bool>("stage3_gather_fp16_weights_on_model_save");
  zero.stage3_gather_16bit_weights_on_model_save = gather.value_or(false);
}

// Settings of DeepSpeed's own implementation that change speed or memory, never the result.
void accept_implementation_settings(ConfigBlock& block) {
  for (const char* key :
       {"use_multi_rank_bucket_allreduce", "allgather_partitions", "elastic_checkpoint", "ignore_unused_parameters",
        "round_robin_gradients", "memory_efficient_linear", "pipeline_loading_checkpoint", "override_module_apply",
        "log_trace_cache_warnings", "enable_sanity_checks", "save_muon_momentum_buffer_in_memory"})
    block.accept<bool>(key);
  block.get_at_least<std::int64_t>("allgather_bucket_size", 500'000'000, 0);
  block.accept_any("leaf_module");
}

}  // namespace

void read_zero(ConfigBlock& root, ZeroConfig& zero, std::vector<std::string>& warnings) {
  // DeepSpeed's oldest form: "zero_optimization": true means stage 1.
  if (const nlohmann::json* flag = root.value_of("zero_optimization"); flag && flag->is_boolean()) {
    zero.stage = flag->get<bool>() ? 1 : 0;
    root.accept<bool>("zero_optimization");
    warnings.push_back(root.where("zero_optimization") +
                       " as true/false is deprecated; write {\"stage\": " + std::to_string(zero.stage) + "}");
    return;
  }
  ConfigBlock block = root.child("zero_optimization", kModel);
  zero.stage = block.get<int>("stage", 0);
  ZT_REQUIRE(zero.stage >= 0 && zero.stage <= 3,
             block.where("stage") + " must be 0, 1, 2 or 3, got " + std::to_string(zero.stage));
  zero.contiguous_gradients = block.get("contiguous_gradients", zero.contiguous_gradients);
  zero.reduce_scatter = block.get("reduce_scatter", zero.reduce_scatter);
  // 0 is legal: DeepSpeed then reduces each gradient on its own, as a bucket of one element does.
  zero.reduce_bucket_size =
      std::max<std::int64_t>(1, block.get_at_least<std::int64_t>("reduce_bucket_size", 500'000'000, 0));
  zero.overlap_comm = block.get("overlap_comm", zero.stage == 3);
  zero.sub_group_size = block.get_at_least<std::int64_t>("sub_group_size", zero.sub_group_size, 0);
  read_stage3(block, zero, warnings);
  read_offload(block, zero, warnings);
  block.ignore_unless("load_from_fp32_weights", true, "is not supported: a resume always takes the fp32 master weights",
                      warnings);
  block.ignore_unless("legacy_stage1", false, "is not supported", warnings);
  block.get_at_least<std::int64_t>("zero_hpz_partition_size", 1, 0);
  block.ignore_unless<std::int64_t>("zero_hpz_partition_size", 1, "(ZeRO++ hierarchical partitioning) is not supported",
                                    warnings);
  for (const char* key : {"zero_quantized_weights", "zero_quantized_nontrainable_weights", "zero_quantized_gradients"})
    block.ignore_unless(key, false, "(ZeRO++ quantization) is not supported: zerotune communicates in full precision",
                        warnings);
  block.ignore("zeropp_loco_param", "(LoCo-Zero++) is not supported", warnings);
  block.ignore_unless<std::int64_t>("mics_shard_size", -1, "(MiCS) is not supported", warnings);
  block.ignore_unless("mics_hierarchical_params_gather", false, "(MiCS) is not supported", warnings);
  block.ignore("zenflow", "(ZenFlow) is not supported", warnings);
  accept_implementation_settings(block);
  block.refuse_unknown("DeepSpeed's zero_optimization block");
}

}  // namespace zt::train
