#include "train/report/train_metrics.h"

#include <cmath>
#include <cstdlib>
#include <string>

#include "runtime/error.h"

namespace zt::train {

FlopsModel flops_model(const models::ModelConfig& config, std::int64_t total_parameters) {
  // An untied embedding is a lookup, not a matmul; tied, it is also the LM head's weight.
  const std::int64_t lookup_only = config.tie_word_embeddings ? 0 : config.vocab_size * config.hidden_size;
  return {total_parameters - lookup_only, config.num_layers, config.q_size()};
}

double training_flops(const FlopsModel& model, double tokens, double squared_lengths) {
  // 2 FLOPs per multiply-add in the forward, twice that in the backward (input and weight
  // gradients); attention's Q·Kᵀ and P·V add 2 · 2 · width · length² per layer and sequence.
  return 6.0 * static_cast<double>(model.matmul_parameters) * tokens +
         12.0 * static_cast<double>(model.layers) * static_cast<double>(model.attention_width) * squared_lengths;
}

double squared_sequence_lengths(const std::vector<std::int32_t>& cu_seqlens) {
  double sum = 0.0;
  for (std::size_t i = 1; i < cu_seqlens.size(); ++i) {
    const double length = cu_seqlens[i] - cu_seqlens[i - 1];
    sum += length * length;
  }
  return sum;
}

std::optional<double> dense_flops_per_sm_per_clock(int major, int minor) {
  // A100: 108 SMs · 1.41 GHz · 2048 = 312 TFLOP/s; A40: 84 · 1.74 GHz · 1024 = 150;
  // L40S: 142 · 2.52 GHz · 1024 = 366; H100/H200 SXM: 132 · 1.83 GHz · 4096 = 989.
  if (major == 8 && minor == 0) return 2048.0;
  if (major == 8 && (minor == 6 || minor == 9)) return 1024.0;
  if (major == 9 && minor == 0) return 4096.0;
  return std::nullopt;
}

std::optional<double> gpu_peak_flops(const DeviceProperties& device, int sm_clock_khz) {
  if (const char* text = std::getenv("ZT_PEAK_TFLOPS"); text != nullptr && *text != '\0') {
    char* end = nullptr;
    const double tflops = std::strtod(text, &end);
    ZT_REQUIRE(*end == '\0' && std::isfinite(tflops) && tflops > 0,
               std::string("ZT_PEAK_TFLOPS='") + text + "' is not a positive number of TFLOP/s (e.g. 989)");
    return tflops * 1e12;
  }
  const std::optional<double> per_sm = dense_flops_per_sm_per_clock(device.compute_major, device.compute_minor);
  if (!per_sm || sm_clock_khz <= 0) return std::nullopt;
  return *per_sm * device.multiprocessors * (sm_clock_khz * 1e3);
}

void ThroughputWindow::add_batch(const std::vector<std::int32_t>& cu_seqlens) {
  if (!cu_seqlens.empty()) tokens += cu_seqlens.back();
  squared_lengths += squared_sequence_lengths(cu_seqlens);
}

}  // namespace zt::train
