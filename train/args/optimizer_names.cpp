// --optim: HF's OptimizerNames. Those that name the AdamW zerotune runs (decoupled weight decay,
// bias-corrected moments, float32 state; fused, apex's or XLA's kernels of the same update) are
// accepted; the others are refused with what makes them another optimizer.
#include <string_view>

#include "train/args/argument_table.h"

namespace zt::train {
namespace {

constexpr std::string_view kAdamwNames[] = {"adamw_torch",      "adamw_torch_fused", "adamw_hf",
                                            "adamw_apex_fused", "adamw_torch_xla",   "adamw_torch_npu_fused"};

struct OptimizerFamily {
  std::string_view prefix;  // of the names it covers
  const char* reason;
};

// First match wins: the paged and low-bit variants before the families they belong to.
constexpr OptimizerFamily kFamilies[] = {
    {"paged_", "it pages the optimizer state between GPU and CPU memory (bitsandbytes)"},
    {"adamw_torch_4bit", "it keeps AdamW's state in 4 bits"},
    {"adamw_torch_8bit", "it keeps AdamW's state in 8 bits"},
    {"adamw_bnb_8bit", "it keeps AdamW's state in 8 bits (bitsandbytes)"},
    {"adamw_8bit", "it keeps AdamW's state in 8 bits (bitsandbytes)"},
    {"adamw_anyprecision", "it keeps the weights and state in bfloat16 with Kahan summation"},
    {"adafactor", "Adafactor factors the second moments and scales updates by the parameters' size"},
    {"ademamix", "AdEMAMix mixes a fast and a slow momentum"},
    {"lion", "Lion steps by the sign of its momentum"},
    {"sgd", "SGD keeps no second moment"},
    {"adagrad", "Adagrad sums squared gradients without decay"},
    {"rmsprop", "RMSprop keeps no first moment"},
    {"galore_", "GaLore projects the gradients to a low rank"},
    {"apollo_", "APOLLO scales updates by a low-rank estimate"},
    {"lomo", "LOMO fuses the update into backward and keeps no optimizer state"},
    {"adalomo", "AdaLomo fuses the update into backward with a factored second moment"},
    {"grokadamw", "GrokAdamW amplifies the slow part of the gradients"},
    {"schedule_free_", "schedule-free optimizers replace the learning-rate schedule"},
    {"stable_adamw", "StableAdamW clips each parameter's update"},
};

std::string adamw_names() {
  std::string names;
  for (std::string_view name : kAdamwNames) names += std::string(names.empty() ? "" : ", ") + std::string(name);
  return names;
}

}  // namespace

void check_optimizer_name(const std::string& optim, std::vector<std::string>& errors) {
  for (std::string_view name : kAdamwNames)
    if (optim == name) return;
  const std::string zerotunes =
      "zerotune's optimizer is AdamW with float32 state, which --optim " + adamw_names() + " all name";
  for (const OptimizerFamily& family : kFamilies) {
    if (optim.rfind(family.prefix, 0) == 0) {
      errors.push_back("--optim " + optim + " is not supported: " + family.reason + "; " + zerotunes);
      return;
    }
  }
  errors.push_back("--optim " + optim + " is not an optimizer name HF knows; " + zerotunes);
}

}  // namespace zt::train
