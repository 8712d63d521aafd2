// Throughput figures for the training log: tokens per second and model FLOPs utilisation
// (mfu). A step's FLOPs are estimated as PaLM's appendix B does, forward and backward of
// every matmul whether its weight trains or not (see docs/TRAINING.md, "What is logged"):
//   6 · N · tokens  +  12 · layers · attention_width · Σ over sequences of length²
// where N counts the parameters that take part in a matmul (the input embedding only when it
// is tied to the LM head) and attention_width = heads · head_dim.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "models/config/config.h"
#include "runtime/device.h"

namespace zt::train {

struct FlopsModel {
  std::int64_t matmul_parameters = 0;
  std::int64_t layers = 0;
  std::int64_t attention_width = 0;
};

// `total_parameters` is the model's parameter count, the embedding table included.
FlopsModel flops_model(const models::ModelConfig& config, std::int64_t total_parameters);

// Training FLOPs of `tokens` tokens whose sequences' squared lengths sum to `squared_lengths`.
double training_flops(const FlopsModel& model, double tokens, double squared_lengths);

// Σ length² of the sequences of a packed micro-batch, from its cu_seqlens.
double squared_sequence_lengths(const std::vector<std::int32_t>& cu_seqlens);

// Dense bf16/fp16 tensor-core FLOPs per SM per clock (float32 accumulation) of a compute
// capability; nullopt for one zerotune has no figure for.
std::optional<double> dense_flops_per_sm_per_clock(int major, int minor);

// The GPU's dense bf16/fp16 peak in FLOP/s: ZT_PEAK_TFLOPS when set (an error names a value
// that is not a positive number), else SMs · clock · the per-SM figure; nullopt when neither
// is known.
std::optional<double> gpu_peak_flops(const DeviceProperties& device, int sm_clock_khz);

// What the steps since the last log entry did, summed over ranks before use.
struct ThroughputWindow {
  double tokens = 0.0;
  double squared_lengths = 0.0;
  double seconds = 0.0;  // wall time of the steps alone, evaluation and saving excluded

  void add_batch(const std::vector<std::int32_t>& cu_seqlens);
};

}  // namespace zt::train
