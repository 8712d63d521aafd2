// What the attention benchmarks (bench/attention_bench.cu, bench/cudnn_attention_bench.cu)
// share: causal bfloat16 attention over equal-length sequences at the same shapes, random
// inputs on the GPU, and TFLOP/s counted over the causal half of the products, 4·B·H·S²·D/2
// for the forward and 3.5 times that for forward + backward, as FlashAttention's benchmarks do.
#pragma once

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>

#include "bench/gpu_bench.h"
#include "runtime/device.h"
#include "tensor/tensor.h"

namespace zt::bench {

struct AttentionProblem {
  int batch, heads, kv_heads, seqlen, head_dim;

  std::int64_t tokens() const { return static_cast<std::int64_t>(batch) * seqlen; }
  float softmax_scale() const { return 1.0f / std::sqrt(static_cast<float>(head_dim)); }
  double forward_flops() const { return 4.0 * batch * heads * static_cast<double>(seqlen) * seqlen * head_dim / 2.0; }
  double forward_backward_flops() const { return 3.5 * forward_flops(); }
};

// q, k, v and the output's gradient, standard normal bfloat16 in the packed layout
// [tokens, heads, head_dim].
struct RandomAttentionInputs {
  Tensor q, k, v, grad_out;

  explicit RandomAttentionInputs(const AttentionProblem& p)
      : q(Tensor::normal({p.tokens(), p.heads, p.head_dim}, 1, 0, 0.0, 1.0, DType::kBF16, Device::cuda())),
        k(Tensor::normal({p.tokens(), p.kv_heads, p.head_dim}, 2, 0, 0.0, 1.0, DType::kBF16, Device::cuda())),
        v(Tensor::normal({p.tokens(), p.kv_heads, p.head_dim}, 3, 0, 0.0, 1.0, DType::kBF16, Device::cuda())),
        grad_out(Tensor::normal({p.tokens(), p.heads, p.head_dim}, 4, 0, 0.0, 1.0, DType::kBF16, Device::cuda())) {}
};

// One attention benchmark: skipped without a GPU; otherwise the buffers make() returns, then
// run(buffers) timed, reported as TFLOP/s of `flops` per iteration.
template <typename Make, typename Run>
void time_attention(benchmark::State& state, double flops, Make&& make, Run&& run) {
  if (!cuda_available()) return state.SkipWithError("no CUDA GPU");
  auto buffers = make();
  time_on_gpu(state, [&] { run(buffers); });
  report_tflops(state, flops);
}

}  // namespace zt::bench

// Registers benchmark function `fn` (taking an AttentionProblem) at every measured shape.
#define ZT_ATTENTION_SHAPES(fn)                                                                  \
  BENCHMARK_CAPTURE(fn, B4_H16_S2048_D128, zt::bench::AttentionProblem{4, 16, 16, 2048, 128})    \
      ->UseManualTime()                                                                          \
      ->Unit(benchmark::kMillisecond);                                                           \
  BENCHMARK_CAPTURE(fn, B4_H32_S4096_D128, zt::bench::AttentionProblem{4, 32, 32, 4096, 128})    \
      ->UseManualTime()                                                                          \
      ->Unit(benchmark::kMillisecond);                                                           \
  BENCHMARK_CAPTURE(fn, B8_H16_S2048_D64, zt::bench::AttentionProblem{8, 16, 16, 2048, 64})      \
      ->UseManualTime()                                                                          \
      ->Unit(benchmark::kMillisecond);                                                           \
  BENCHMARK_CAPTURE(fn, B4_H16_KV2_S2048_D128, zt::bench::AttentionProblem{4, 16, 2, 2048, 128}) \
      ->UseManualTime()                                                                          \
      ->Unit(benchmark::kMillisecond)
