#include "train/memory_recommendation.h"

namespace zt::train {
namespace {

bool fits(const MemoryEstimate& e, const MemoryBudget& budget) {
  return e.gpu_total() <= budget.gpu_bytes && (!budget.host_bytes || e.host_per_node() <= *budget.host_bytes);
}

// With optimizer offload, the smallest CPU share (ratio, in tenths) that still fits: the GPU
// updates the rest while the CPU Adam runs (partial offload), so the step waits less.
MemorySettings least_offloaded(const models::ModelConfig& config, MemorySettings s, const MemoryBudget& budget) {
  if (!s.offload) return s;
  for (int tenths = 1; tenths < 10; ++tenths) {
    MemorySettings partial = s;
    partial.offload_ratio = tenths / 10.0;
    if (fits(estimate_memory(config, partial), budget)) return partial;
  }
  return s;
}

// Steps 1-3 for what `base` trains.
std::optional<Recommendation> search(const models::ModelConfig& config, const MemorySettings& base,
                                     const MemoryBudget& budget) {
  for (const ZeroRow& row : kFastestFirst) {
    for (bool checkpointing : {base.gradient_checkpointing, true}) {
      for (std::int64_t micro = base.micro_batch; micro >= 1; micro /= 2) {
        MemorySettings s = base;
        s.stage = row.stage;
        s.offload = row.offload;
        s.offload_param = row.offload_param;
        s.gradient_checkpointing = checkpointing;
        s.micro_batch = micro;
        if (fits(estimate_memory(config, s), budget)) {
          s = least_offloaded(config, s, budget);
          return Recommendation{.settings = s, .estimate = estimate_memory(config, s)};
        }
      }
      if (base.gradient_checkpointing) break;  // already on: nothing more to try
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<Recommendation> recommend_configuration(const models::ModelConfig& config, const MemorySettings& asked,
                                                      const MemoryBudget& budget,
                                                      const std::vector<std::int64_t>& lora_numels) {
  if (std::optional<Recommendation> found = search(config, asked, budget)) return found;
  if (!asked.full_finetuning() || lora_numels.empty()) return std::nullopt;
  MemorySettings lora = asked;
  lora.trainable_numels = lora_numels;
  std::optional<Recommendation> found = search(config, lora, budget);
  if (found) found->switched_to_lora = true;
  return found;
}

}  // namespace zt::train
