// The configuration `zerotune estimate` recommends: the fastest way to train a model within a
// GPU's memory, by the estimate of train/memory_estimate.h, leaving headroom: a recommendation
// uses at most kUsableGpuShare of the card, since the caching allocator's fragmentation, the
// CUDA context and the libraries' workspaces vary from run to run. The search goes from the
// fastest configurations to the slowest, so the first one that fits is the one recommended:
//   1. ZeRO stage and offload, fastest first (kFastestFirst): stages 0, 1, 2, then 1-2 with
//      optimizer offload, then 3, then 3 with optimizer offload; within each row the asked
//      micro-batch, then halved down to 1 (the same global batch needs more accumulation);
//   2. only when no such row fits, the same rows with gradient checkpointing (stage 3, whose
//      engine recomputes every layer whatever the flag says, comes here too): recomputing
//      every layer's forward costs about a third more compute in every micro-step, where a
//      higher stage adds collectives that overlap backward and optimizer offload adds one CPU
//      update per optimizer step, which the GPU's share of the update overlaps;
//   3. only then stage 3 with parameter offload, alone and with optimizer offload, without and
//      then with checkpointing: every module crosses PCIe in every pass (and once more in the
//      recomputation), the slowest of all, and the only way a model whose weights outgrow the
//      GPU trains on one.
// When nothing that trains what was asked fits, the same search runs for LoRA. LoRA's search
// (asked or fallen back to) tries QLoRA (LoRA on a 4-bit base, NF4 with double quantization,
// stages 0-2, every layer recomputed) after the rows without parameter offload and before those
// with it: dequantizing a layer costs less than moving it over PCIe in every pass. A configuration
// that needs more host memory than the node has (offload) does not fit either. Where optimizer
// offload fits, the GPU keeps the largest share of the update that fits (offload ratio).
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

// The stage and offload rows the trainer runs, fastest first (steps 1 and 3 above).
// Parameter offload is stage 3's only.
struct ZeroRow {
  int stage;
  bool offload;
  bool offload_param = false;
};
inline constexpr ZeroRow kFastestFirst[] = {{0, false}, {1, false}, {2, false},       {1, true},      {2, true},
                                            {3, false}, {3, true},  {3, false, true}, {3, true, true}};

// The share of a GPU's memory a recommendation may use.
inline constexpr double kUsableGpuShare = 0.9;

struct MemoryBudget {
  std::int64_t gpu_bytes = 0;                // per GPU
  std::optional<std::int64_t> host_bytes{};  // per node; unset: not checked

  // What a recommendation may use of each GPU: kUsableGpuShare of gpu_bytes.
  std::int64_t usable_gpu_bytes() const {
    return static_cast<std::int64_t>(static_cast<double>(gpu_bytes) * kUsableGpuShare);
  }
};

struct Recommendation {
  MemorySettings settings;  // stage, offload, micro_batch, gradient_checkpointing, trainable_numels
  MemoryEstimate estimate;  // estimate_memory(config, settings): within kUsableGpuShare of the budget
  bool switched_to_lora = false;
  bool switched_to_qlora = false;  // settings.quantized_base: --quantization_bit 4 was not asked for
};

// `asked` gives the world, the dtype, the sequence length and what trains (trainable_numels,
// empty for every parameter); `lora_numels` what LoRA would train (lora_trainable_numels) when
// `asked` trains every parameter. nullopt when nothing fits.
std::optional<Recommendation> recommend_configuration(const models::ModelConfig& config, const MemorySettings& asked,
                                                      const MemoryBudget& budget,
                                                      const std::vector<std::int64_t>& lora_numels);

}  // namespace zt::train
