#include "train/zero/zero3_frozen_copy.h"

#include "runtime/log.h"
#include "train/zero/zero3_partitioner.h"

namespace zt::train {
namespace {

// The model and its partitioner, released partitioner first (it unhooks from the model).
struct PartitionedCopy {
  explicit PartitionedCopy(models::CausalLM copy) : model(std::move(copy)) {}
  models::CausalLM model;
  std::unique_ptr<Zero3Partitioner> partitioner;
};

}  // namespace

std::shared_ptr<const models::CausalLM> partition_frozen_copy(models::CausalLM copy,
                                                              distributed::Communicator& communicator,
                                                              const ZeroConfig& zero) {
  auto held = std::make_shared<PartitionedCopy>(std::move(copy));
  held->partitioner = std::make_unique<Zero3Partitioner>(
      held->model, std::vector<TrainableParameter>{}, communicator, zero.stage3_param_persistence_threshold,
      PrefetchLimits{.bucket_numel = zero.stage3_prefetch_bucket_size,
                     .max_live_numel = zero.stage3_max_live_parameters},
      ParameterOffloadOptions{.enabled = zero.offload_param, .pin_memory = zero.offload_param_pin_memory});
  if (communicator.rank() == 0)
    ZT_LOG(kInfo, "reference model: partitioned over "
                      << communicator.world_size() << " ranks like the policy (ZeRO-3), gathered a module at a time");
  // Shares `held`'s lifetime, pointing at its model.
  return std::shared_ptr<const models::CausalLM>(held, &held->model);
}

}  // namespace zt::train
