// The configuration `zerotune estimate` recommends: the fastest way to train a model within a
// GPU's memory, by the estimate of train/memory_estimate.h. The search follows the order HF's
// DeepSpeed guide tunes a run by, so the first configuration that fits is the fastest one:
//   1. ZeRO stage and offload, fastest first: stages 0, 1, 2, then 1-2 with optimizer offload,
//      then 3, then 3 with optimizer offload, then 3 with parameter offload, alone and with
//      optimizer offload (the slowest: every module crosses PCIe in every pass, and the only
//      way a model whose weights outgrow the GPU trains on one);
//   2. within each, gradient checkpointing as asked, then on (a third more compute);
//   3. within each, the asked micro-batch, then halved down to 1 (the same global batch needs
//      more gradient accumulation).
// When nothing that trains what was asked fits, the same search runs for LoRA. A configuration
// that needs more host memory than the node has (offload) does not fit either.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "models/config/config.h"
#include "train/memory_estimate.h"

namespace zt::train {

// Whether a run can be configured so: DeepSpeed's config offloads the optimizer with stages
// 1-3 only (train/deepspeed/deepspeed_zero.cpp). On one GPU every stage is the same run.
inline bool trainer_runs(int stage, bool offload) { return !offload || stage >= 1; }

// The stage and offload rows the trainer runs, fastest first (step 1 above). Parameter
// offload is stage 3's only.
struct ZeroRow {
  int stage;
  bool offload;
  bool offload_param = false;
};
inline constexpr ZeroRow kFastestFirst[] = {{0, false}, {1, false}, {2, false},       {1, true},      {2, true},
                                            {3, false}, {3, true},  {3, false, true}, {3, true, true}};

struct MemoryBudget {
  std::int64_t gpu_bytes = 0;                // per GPU
  std::optional<std::int64_t> host_bytes{};  // per node; unset: not checked
};

struct Recommendation {
  MemorySettings settings;  // stage, offload, micro_batch, gradient_checkpointing, trainable_numels
  MemoryEstimate estimate;  // estimate_memory(config, settings): within the budget
  bool switched_to_lora = false;
};

// `asked` gives the world, the dtype, the sequence length and what trains (trainable_numels,
// empty for every parameter); `lora_numels` what LoRA would train (lora_trainable_numels) when
// `asked` trains every parameter. nullopt when nothing fits.
std::optional<Recommendation> recommend_configuration(const models::ModelConfig& config, const MemorySettings& asked,
                                                      const MemoryBudget& budget,
                                                      const std::vector<std::int64_t>& lora_numels);

}  // namespace zt::train
