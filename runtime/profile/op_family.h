// The families a training step's work is sorted into by the step profiler (step_profiler.h):
// what the ops are, not which op, so a table of a dozen rows says where a step goes.
#pragma once

#include <array>
#include <cstddef>

namespace zt {

enum class OpFamily {
  kGemm,            // linear layers, LoRA products, matmuls
  kAttention,       // attention forward and backward
  kNorm,            // RMSNorm (and its fused residual add)
  kRope,            // rotary position embedding
  kSwiglu,          // the MLP's gated activation
  kEmbedding,       // token embedding lookup and its gradient
  kLossHead,        // LM head + cross-entropy (fused or not)
  kElementwise,     // adds, scales, casts, copies of the autograd graph
  kGradAccumulate,  // gradients summed into their buffers, and the buffers zeroed after a step
  // The clipping norm (and inf/NaN verdict), agreed over ranks: its pass over the gradients,
  // with the wait for backward's last work that reading it back to the host includes.
  kGradNorm,
  kOptimizer,   // AdamW, master-to-working copies
  kCollective,  // all-reduce, reduce-scatter, all-gather, broadcast, barrier
  // ZeRO offload (docs/ZERO.md, The offload schedule): the host's share of the step, as the
  // device sees it. Work that runs behind the device's own shows in no family.
  kOffloadCopy,  // waiting for host<->device copies (gradients out, weights back, offloaded shards in)
  kCpuAdam,      // the CPU Adam updating while the device has nothing queued
  kOffloadWait,  // waiting for the host's gradient additions (host-resident gradient partition)
  kOtherOps,     // recorded ops of no family above (recomputation's own bookkeeping, ...)
  kUntracked,    // inside the step but in no op: host gaps, synchronisations, data copies
};

inline constexpr std::size_t kOpFamilyCount = static_cast<std::size_t>(OpFamily::kUntracked) + 1;

// "gemm", "attention", ..., "untracked": the names of the table and the JSON file.
const char* op_family_name(OpFamily family);

template <typename T>
using PerOpFamily = std::array<T, kOpFamilyCount>;

}  // namespace zt
