#include "runtime/profile/op_family.h"

namespace zt {

const char* op_family_name(OpFamily family) {
  switch (family) {
    case OpFamily::kGemm:
      return "gemm";
    case OpFamily::kAttention:
      return "attention";
    case OpFamily::kNorm:
      return "norm";
    case OpFamily::kRope:
      return "rope";
    case OpFamily::kSwiglu:
      return "swiglu";
    case OpFamily::kEmbedding:
      return "embedding";
    case OpFamily::kLossHead:
      return "loss_head";
    case OpFamily::kElementwise:
      return "elementwise";
    case OpFamily::kGradAccumulate:
      return "grad_accumulate";
    case OpFamily::kOptimizer:
      return "optimizer";
    case OpFamily::kCollective:
      return "collectives";
    case OpFamily::kOffloadCopy:
      return "offload_copy";
    case OpFamily::kCpuAdam:
      return "cpu_adam";
    case OpFamily::kOffloadWait:
      return "offload_wait";
    case OpFamily::kOtherOps:
      return "other_ops";
    case OpFamily::kUntracked:
      return "untracked";
  }
  return "?";
}

}  // namespace zt
