#include "autograd/op_region.h"

#include <string_view>
#include <utility>

namespace zt::autograd {

OpFamily op_family(std::string_view op) {
  static constexpr std::pair<std::string_view, OpFamily> kFamilies[] = {
      {"linear", OpFamily::kGemm},
      {"matmul", OpFamily::kGemm},
      {"attention", OpFamily::kAttention},
      {"rmsnorm", OpFamily::kNorm},
      {"residual_rmsnorm", OpFamily::kNorm},
      {"rope", OpFamily::kRope},
      {"swiglu", OpFamily::kSwiglu},
      {"swiglu_linear", OpFamily::kGemm},  // its SwiGLU pass opens a "swiglu" region inside
      {"embedding", OpFamily::kEmbedding},
      {"gather_rows", OpFamily::kEmbedding},
      {"linear_cross_entropy", OpFamily::kLossHead},
      {"cross_entropy", OpFamily::kLossHead},
      {"softmax", OpFamily::kLossHead},
      {"add", OpFamily::kElementwise},
      {"sub", OpFamily::kElementwise},
      {"mul", OpFamily::kElementwise},
      {"scale", OpFamily::kElementwise},
      {"residual_add", OpFamily::kElementwise},
      {"cast", OpFamily::kElementwise},
      {"dropout", OpFamily::kElementwise},
      {"tanh", OpFamily::kElementwise},
      {"sum", OpFamily::kElementwise},
      {"mean", OpFamily::kElementwise},
      {"reshape", OpFamily::kElementwise},
      {"narrow", OpFamily::kElementwise},
  };
  for (const auto& [name, family] : kFamilies)
    if (name == op) return family;
  return OpFamily::kOtherOps;
}

}  // namespace zt::autograd
