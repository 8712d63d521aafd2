#include "train/memory_recommendation.h"

namespace zt::train {
namespace {

// Within the GPU share a recommendation may use, and the host memory when it is known.
bool fits(const MemoryEstimate& e, const MemoryBudget& budget) {
  return e.gpu_total() <= budget.usable_gpu_bytes() && (!budget.host_bytes || e.host_per_node() <= *budget.host_bytes);
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

// The first of the rows with (or without) parameter offload that fits, in kFastestFirst's
// order, each at the asked micro-batch and then halved. With `recompute` every row recomputes
// its layers in backward (gradient checkpointing turned on where the row would not already);
// without it, rows that recompute anyway (stage 3's engine) wait for the pass with it.
std::optional<Recommendation> first_fitting_row(const models::ModelConfig& config, const MemorySettings& base,
                                                const MemoryBudget& budget, bool parameter_offload, bool recompute) {
  for (const ZeroRow& row : kFastestFirst) {
    if (row.offload_param != parameter_offload) continue;
    if (base.quantized_base && row.stage == 3) continue;  // both partition the base weights
    for (std::int64_t micro = base.micro_batch; micro >= 1; micro /= 2) {
      MemorySettings s = base;
      s.stage = row.stage;
      s.offload = row.offload;
      s.offload_param = row.offload_param;
      s.micro_batch = micro;
      if (recompute && !recomputes_layers(s)) s.gradient_checkpointing = true;
      if (recomputes_layers(s) != recompute) break;
      if (fits(estimate_memory(config, s), budget)) {
        s = least_offloaded(config, s, budget);
        return Recommendation{.settings = s, .estimate = estimate_memory(config, s)};
      }
    }
  }
  return std::nullopt;
}

// The rows with (or without) parameter offload for what `base` trains: recomputation (when not
// asked for) second.
std::optional<Recommendation> search_rows(const models::ModelConfig& config, const MemorySettings& base,
                                          const MemoryBudget& budget, bool parameter_offload) {
  for (bool recompute : {false, true}) {
    if (!recompute && base.gradient_checkpointing) continue;  // asked for: every row recomputes
    if (auto found = first_fitting_row(config, base, budget, parameter_offload, recompute)) return found;
  }
  return std::nullopt;
}

// Steps 1-3 for what `base` trains: recomputation (when not asked for) before parameter offload.
std::optional<Recommendation> search(const models::ModelConfig& config, const MemorySettings& base,
                                     const MemoryBudget& budget) {
  for (bool parameter_offload : {false, true})
    if (auto found = search_rows(config, base, budget, parameter_offload)) return found;
  return std::nullopt;
}

// LoRA's search: QLoRA (a 4-bit base, stages 0-2) comes before parameter offload, whose every
// module crosses PCIe in every pass.
std::optional<Recommendation> search_lora(const models::ModelConfig& config, const MemorySettings& lora,
                                          const MemoryBudget& budget) {
  if (auto found = search_rows(config, lora, budget, false)) return found;
  MemorySettings qlora = lora;
  qlora.quantized_base = true;
  qlora.double_quant = true;
  if (auto found = search_rows(config, qlora, budget, false)) {
    found->switched_to_qlora = true;
    return found;
  }
  return search_rows(config, lora, budget, true);
}

}  // namespace

std::optional<Recommendation> recommend_configuration(const models::ModelConfig& config, const MemorySettings& asked,
                                                      const MemoryBudget& budget,
                                                      const std::vector<std::int64_t>& lora_numels) {
  if (asked.quantized_base) return search(config, asked, budget);
  if (!asked.full_finetuning()) return search_lora(config, asked, budget);
  if (std::optional<Recommendation> found = search(config, asked, budget)) return found;
  if (lora_numels.empty()) return std::nullopt;
  MemorySettings lora = asked;
  lora.trainable_numels = lora_numels;
  std::optional<Recommendation> found = search_lora(config, lora, budget);
  if (found) found->switched_to_lora = true;
  return found;
}

}  // namespace zt::train
