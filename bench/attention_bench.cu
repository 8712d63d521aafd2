// Causal attention, bfloat16, equal-length sequences in the packed layout, timed on the kernels
// themselves (cuda/ entry points on preallocated buffers, no host-side checks): the tensor-core
// forward, forward + backward with atomic and with deterministic dQ, and the simple kernels at
// one shape for the version ladder in docs/ATTENTION.md. TFLOP/s counts the causal half of the
// products, 4·B·H·S²·D/2 for the forward and 3.5 times that for forward + backward, as
// FlashAttention's benchmarks do.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "bench/gpu_bench.h"
#include "cuda/attention/simple/attention.cuh"
#include "cuda/attention/flash/flash_attention.cuh"
#include "runtime/device.h"
#include "tensor/tensor.h"

namespace zt {
namespace {

struct Problem {
  int batch, heads, kv_heads, seqlen, head_dim;
  double forward_flops() const {
    return 4.0 * batch * heads * static_cast<double>(seqlen) * seqlen * head_dim / 2.0;
  }
};

struct Buffers {
  Tensor q, k, v, cu_seqlens, out, lse, grad_out, grad_q, grad_k, grad_v, delta, dq_accum;
  cuda::AttentionDims dims;

  explicit Buffers(const Problem& p) {
    const std::int64_t tokens = static_cast<std::int64_t>(p.batch) * p.seqlen;
    q = Tensor::normal({tokens, p.heads, p.head_dim}, 1, 0, 0.0, 1.0, DType::kBF16, Device::cuda());
    k = Tensor::normal({tokens, p.kv_heads, p.head_dim}, 2, 0, 0.0, 1.0, DType::kBF16, Device::cuda());
    v = Tensor::normal({tokens, p.kv_heads, p.head_dim}, 3, 0, 0.0, 1.0, DType::kBF16, Device::cuda());
    grad_out = Tensor::normal({tokens, p.heads, p.head_dim}, 4, 0, 0.0, 1.0, DType::kBF16, Device::cuda());
    std::vector<double> offsets;
    for (int b = 0; b <= p.batch; ++b) offsets.push_back(static_cast<double>(b) * p.seqlen);
    cu_seqlens = Tensor::from_values(offsets, {p.batch + 1}, DType::kI32).to(Device::cuda());
    out = Tensor::empty(q.shape(), DType::kBF16, Device::cuda());
    lse = Tensor::empty({tokens, p.heads}, DType::kF32, Device::cuda());
    grad_q = Tensor::empty(q.shape(), DType::kBF16, Device::cuda());
    grad_k = Tensor::empty(k.shape(), DType::kBF16, Device::cuda());
    grad_v = Tensor::empty(v.shape(), DType::kBF16, Device::cuda());
    delta = Tensor::empty({tokens, p.heads}, DType::kF32, Device::cuda());
    dq_accum = Tensor::empty(q.shape(), DType::kF32, Device::cuda());
    dims.total_tokens = tokens;
    dims.batch = p.batch;
    dims.num_heads = p.heads;
    dims.num_kv_heads = p.kv_heads;
    dims.head_dim = p.head_dim;
    dims.max_seqlen = p.seqlen;
    dims.softmax_scale = 1.0f / std::sqrt(static_cast<float>(p.head_dim));
    dims.causal = true;
  }
  cuda::AttentionInputs inputs() const {
    return {q.data_ptr(), k.data_ptr(), v.data_ptr(), nullptr, nullptr, cu_seqlens.data<std::int32_t>()};
  }
  cuda::AttentionGradOutputs grads() const { return {grad_q.data_ptr(), grad_k.data_ptr(), grad_v.data_ptr()}; }
  void flash_forward() const {
    cuda::flash_attention_forward(dims, inputs(), DType::kBF16, out.data_ptr(), lse.data<float>(), nullptr);
  }
  void flash_backward(bool deterministic) const {
    cuda::flash_attention_backward(dims, inputs(), DType::kBF16, out.data_ptr(), grad_out.data_ptr(),
                                   lse.data<float>(), {delta.data<float>(), dq_accum.data<float>()}, grads(),
                                   deterministic, nullptr);
  }
  void simple_forward() const {
    cuda::attention_forward(dims, inputs(), DType::kBF16, out.data_ptr(), lse.data<float>(), nullptr);
  }
  void simple_backward() const {
    cuda::attention_backward(dims, inputs(), DType::kBF16, out.data_ptr(), grad_out.data_ptr(), lse.data<float>(),
                             delta.data<float>(), grads(), nullptr);
  }
};

void BM_AttentionFwd(benchmark::State& state, Problem p) {
  if (!cuda_available()) return state.SkipWithError("no CUDA GPU");
  Buffers buffers(p);
  bench::time_on_gpu(state, [&] { buffers.flash_forward(); });
  bench::report_tflops(state, p.forward_flops());
}

void BM_AttentionFwdBwd(benchmark::State& state, Problem p) {
  if (!cuda_available()) return state.SkipWithError("no CUDA GPU");
  Buffers buffers(p);
  bench::time_on_gpu(state, [&] {
    buffers.flash_forward();
    buffers.flash_backward(false);
  });
  bench::report_tflops(state, 3.5 * p.forward_flops());
}

void BM_AttentionFwdBwdDeterministic(benchmark::State& state, Problem p) {
  if (!cuda_available()) return state.SkipWithError("no CUDA GPU");
  Buffers buffers(p);
  bench::time_on_gpu(state, [&] {
    buffers.flash_forward();
    buffers.flash_backward(true);
  });
  bench::report_tflops(state, 3.5 * p.forward_flops());
}

void BM_AttentionSimpleFwd(benchmark::State& state, Problem p) {
  if (!cuda_available()) return state.SkipWithError("no CUDA GPU");
  Buffers buffers(p);
  bench::time_on_gpu(state, [&] { buffers.simple_forward(); });
  bench::report_tflops(state, p.forward_flops());
}

void BM_AttentionSimpleFwdBwd(benchmark::State& state, Problem p) {
  if (!cuda_available()) return state.SkipWithError("no CUDA GPU");
  Buffers buffers(p);
  bench::time_on_gpu(state, [&] {
    buffers.simple_forward();
    buffers.simple_backward();
  });
  bench::report_tflops(state, 3.5 * p.forward_flops());
}

#define ZT_ATTENTION_SHAPES(bench)                                                                        \
  BENCHMARK_CAPTURE(bench, B4_H16_S2048_D128, Problem{4, 16, 16, 2048, 128})                              \
      ->UseManualTime()                                                                                   \
      ->Unit(benchmark::kMillisecond);                                                                    \
  BENCHMARK_CAPTURE(bench, B4_H32_S4096_D128, Problem{4, 32, 32, 4096, 128})                              \
      ->UseManualTime()                                                                                   \
      ->Unit(benchmark::kMillisecond);                                                                    \
  BENCHMARK_CAPTURE(bench, B8_H16_S2048_D64, Problem{8, 16, 16, 2048, 64})                                \
      ->UseManualTime()                                                                                   \
      ->Unit(benchmark::kMillisecond);                                                                    \
  BENCHMARK_CAPTURE(bench, B4_H16_KV2_S2048_D128, Problem{4, 16, 2, 2048, 128})                           \
      ->UseManualTime()                                                                                   \
      ->Unit(benchmark::kMillisecond)

ZT_ATTENTION_SHAPES(BM_AttentionFwd);
ZT_ATTENTION_SHAPES(BM_AttentionFwdBwd);
ZT_ATTENTION_SHAPES(BM_AttentionFwdBwdDeterministic);
BENCHMARK_CAPTURE(BM_AttentionSimpleFwd, B4_H16_S2048_D128, Problem{4, 16, 16, 2048, 128})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AttentionSimpleFwdBwd, B4_H16_S2048_D128, Problem{4, 16, 16, 2048, 128})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace zt
