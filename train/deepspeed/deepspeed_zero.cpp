// The zero_optimization block, with DeepSpeed's defaults in code. Parsed and validated here;
// the partitioner honours it.
#include "train/deepspeed/config_block.h"
#include "train/deepspeed/deepspeed_config.h"

namespace zt::train {

void read_zero(ConfigBlock block, ZeroConfig& zero, std::vector<std::string>& warnings) {
  zero.stage = block.get("stage", 0);
  ZT_REQUIRE(zero.stage >= 0 && zero.stage <= 3,
             block.where("stage") + " must be 0, 1, 2 or 3, got " + std::to_string(zero.stage));
  zero.contiguous_gradients = block.get("contiguous_gradients", zero.contiguous_gradients);
  zero.reduce_scatter = block.get("reduce_scatter", zero.reduce_scatter);
  zero.reduce_bucket_size = block.get("reduce_bucket_size", zero.reduce_bucket_size);
  zero.overlap_comm = block.get("overlap_comm", zero.stage == 3);
  zero.sub_group_size = block.get("sub_group_size", zero.sub_group_size);
  zero.stage3_prefetch_bucket_size = block.get("stage3_prefetch_bucket_size", zero.stage3_prefetch_bucket_size);
  zero.stage3_param_persistence_threshold =
      block.get("stage3_param_persistence_threshold", zero.stage3_param_persistence_threshold);
  zero.stage3_max_live_parameters = block.get("stage3_max_live_parameters", zero.stage3_max_live_parameters);
  zero.stage3_max_reuse_distance = block.get("stage3_max_reuse_distance", zero.stage3_max_reuse_distance);
  for (const char* key : {"stage3_gather_16bit_weights_on_model_save", "gather_16bit_weights_on_model_save",
                          "stage3_gather_fp16_weights_on_model_save"})
    zero.stage3_gather_16bit_weights_on_model_save = block.get(key, zero.stage3_gather_16bit_weights_on_model_save);
  ZT_REQUIRE(zero.reduce_bucket_size > 0, block.where("reduce_bucket_size") + " must be > 0");

  if (block.has("offload_optimizer")) {
    ConfigBlock offload = block.child("offload_optimizer");
    const std::string device = offload.get<std::string>("device", "none");
    ZT_REQUIRE(device == "none" || device == "cpu",
               offload.where("device") + " '" + device + "' is not supported; use cpu or none");
    ZT_REQUIRE(device == "none" || zero.stage >= 1,
               offload.where("device") + " cpu needs ZeRO stage 1, 2 or 3 (stage is 0)");
    zero.offload_optimizer = device == "cpu";
    zero.offload_pin_memory = offload.get("pin_memory", false);
    for (const char* key : {"buffer_count", "fast_init", "pipeline_read", "pipeline_write", "ratio"})
      offload.ignore(key, "does not apply to CPU offload here", warnings);
    offload.warn_unused(warnings);
  }
  if (block.has("offload_param")) {
    ConfigBlock offload = block.child("offload_param");
    const std::string device = offload.get<std::string>("device", "none");
    ZT_REQUIRE(device == "none", offload.where("device") + " '" + device +
                                     "': parameter offload is not supported; use offload_optimizer, ZeRO stage 3 "
                                     "over more GPUs, or LoRA");
    offload.ignore("pin_memory", "does not apply without parameter offload", warnings);
    offload.warn_unused(warnings);
  }
  block.ignore("allgather_partitions", "is never read by DeepSpeed", warnings);
  block.ignore("allgather_bucket_size", "is ignored by current DeepSpeed", warnings);
  for (const char* key : {"round_robin_gradients", "load_from_fp32_weights", "elastic_checkpoint",
                          "ignore_unused_parameters", "stage3_max_reuse_distance_in_numel"})
    block.ignore(key, "does not apply to zerotune's partitioner", warnings);
  block.warn_unused(warnings);
}

}  // namespace zt::train
