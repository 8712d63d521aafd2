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

}  // namespace zt::train
