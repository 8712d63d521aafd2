// What ZeRO's engines are told: the stage, the gradient buckets, stage 3's partitioning and
// prefetch sizes, and where optimizer state and parameters are offloaded. Filled from a
// DeepSpeed config's zero_optimization block (train/deepspeed/deepspeed_zero.cpp), which
// checks every rule of it; the engines (train/zero/, train/optim/optimizer_offload.h) take it
// as given.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/dtype.h"

namespace zt::train {

struct ZeroConfig {
  int stage = 0;
  bool contiguous_gradients = true;
  bool reduce_scatter = true;
  std::int64_t reduce_bucket_size = 500'000'000;
  bool overlap_comm = false;  // DeepSpeed: true by default for stage 3 only
  std::int64_t sub_group_size = 1'000'000'000;
  std::int64_t stage3_prefetch_bucket_size = 50'000'000;
  std::int64_t stage3_param_persistence_threshold = 100'000;
  std::int64_t stage3_max_live_parameters = 1'000'000'000;
  std::int64_t stage3_max_reuse_distance = 1'000'000'000;
  bool stage3_gather_16bit_weights_on_model_save = false;
  bool offload_optimizer = false;  // offload_optimizer.device "cpu"
  bool offload_pin_memory = true;  // DeepSpeed's default since it pins offload buffers by default
  double offload_ratio = 1.0;      // offload_optimizer.ratio: the CPU Adam's share (partial offload below 1)
  std::optional<double> offload_cpu_cores_share{};  // offload_optimizer.cpuadam_cores_perc, when given
  bool offload_param = false;                       // offload_param.device "cpu" (or cpu_offload_param) under stage 3
  bool offload_param_pin_memory = true;             // offload_param.pin_memory, defaulting as offload_pin_memory does
  // The top-level communication_data_type: the dtype gradients are reduced in; unset: the
  // working dtype they come in, as DeepSpeed does.
  std::optional<DType> communication_data_type{};
  // data_types.grad_accum_dtype, when given: fp32 or the working dtype (the reader refuses any
  // other). Stages 1 and 2 over several ranks without optimizer offload keep their gradients
  // in it; unset, in the working dtype, as DeepSpeed does (train/zero/zero_engine.h).
  std::optional<DType> grad_accum_dtype{};
};

// Why a grad_accum_dtype that is neither fp32 nor `working`, the run's working dtype, is
// refused, saying what to write instead; "" when it is one of those. The trainer's plan refuses
// it once the precision is known (the config reader earlier, where the config sets the
// precision), and the ZeRO engine too.
std::string grad_accum_dtype_conflict(DType accumulation, DType working);

// The dtype stage 1 over several ranks keeps its whole gradients in on the device until the
// accumulation boundary: `grad_accum_dtype`, unset the working dtype, with or without offload
// (DeepSpeed's parameters' .grad; the offloaded partition they reduce into stays fp32).
DType whole_gradient_dtype(std::optional<DType> grad_accum_dtype, DType working);

// The dtype a ZeRO rank keeps its gradient partition in: under stages 1 and 2 over several
// ranks without optimizer offload, `grad_accum_dtype`, unset the working dtype (DeepSpeed's
// get_data_types); fp32 everywhere else (stage 0, stage 3, one rank, and offload, whose CPU
// Adam reads fp32). What the engine allocates and the memory estimate counts.
DType gradient_partition_dtype(int stage, int world_size, bool offload, std::optional<DType> grad_accum_dtype,
                               DType working);

}  // namespace zt::train
