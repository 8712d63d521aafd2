#include "train/zero/zero_config.h"

namespace zt::train {

std::string grad_accum_dtype_conflict(DType accumulation, DType working) {
  if (accumulation == DType::kF32 || accumulation == working) return "";
  std::string message = "data_types.grad_accum_dtype ";
  message += dtype_name(accumulation);
  message += " is neither fp32 nor the working dtype, ";
  message += dtype_name(working);
  message += ": zerotune accumulates gradients in one of those; write \"fp32\"";
  if (working != DType::kF32) message += std::string(" or \"") + dtype_name(working) + "\"";
  message += " (or remove it: DeepSpeed's default is the working dtype)";
  return message;
}

DType gradient_partition_dtype(int stage, int world_size, bool offload, std::optional<DType> grad_accum_dtype,
                               DType working) {
  const bool partitioned = (stage == 1 || stage == 2) && world_size > 1 && !offload;
  return partitioned ? grad_accum_dtype.value_or(working) : DType::kF32;
}

DType whole_gradient_dtype(std::optional<DType> grad_accum_dtype, DType working) {
  return grad_accum_dtype.value_or(working);
}

}  // namespace zt::train
