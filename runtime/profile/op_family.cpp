#include "runtime/profile/op_family.h"

#include <iterator>

#include "runtime/enum_names.h"

namespace zt {

namespace {

constexpr EnumName<OpFamily> kOpFamilyNames[] = {{OpFamily::kGemm, "gemm"},
                                                 {OpFamily::kAttention, "attention"},
                                                 {OpFamily::kNorm, "norm"},
                                                 {OpFamily::kRope, "rope"},
                                                 {OpFamily::kSwiglu, "swiglu"},
                                                 {OpFamily::kEmbedding, "embedding"},
                                                 {OpFamily::kLossHead, "loss_head"},
                                                 {OpFamily::kElementwise, "elementwise"},
                                                 {OpFamily::kGradAccumulate, "grad_accumulate"},
                                                 {OpFamily::kGradNorm, "grad_norm"},
                                                 {OpFamily::kOptimizer, "optimizer"},
                                                 {OpFamily::kCollective, "collectives"},
                                                 {OpFamily::kOffloadCopy, "offload_copy"},
                                                 {OpFamily::kCpuAdam, "cpu_adam"},
                                                 {OpFamily::kOffloadWait, "offload_wait"},
                                                 {OpFamily::kOtherOps, "other_ops"},
                                                 {OpFamily::kUntracked, "untracked"}};
static_assert(std::size(kOpFamilyNames) == kOpFamilyCount, "a family without a name");

}  // namespace

const char* op_family_name(OpFamily family) { return name_of(kOpFamilyNames, family, "?"); }

}  // namespace zt
