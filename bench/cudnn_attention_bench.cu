// cuDNN's fused flash attention (attn_impl=cudnn), the strongest peer of zerotune's own
// kernels: the same shapes and names as bench/attention_bench.cu (causal, bfloat16,
// equal-length sequences, so cuDNN's dense layout), timed on the cuda/ entry points on
// preallocated buffers. The first call of a shape builds and caches its plan, outside the
// timing. TFLOP/s counts the causal half, 4·B·H·S²·D/2 forward, 3.5 times that forward +
// backward.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>

#include "bench/gpu_bench.h"
#include "cuda/attention/cudnn/cudnn_attention.h"
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
  Tensor q, k, v, out, stats, grad_out, grad_q, grad_k, grad_v;
  cuda::CudnnAttentionShape shape;
  float scale = 1.0f;

  Buffers(const Problem& p, bool deterministic) {
    const std::int64_t tokens = static_cast<std::int64_t>(p.batch) * p.seqlen;
    q = Tensor::normal({tokens, p.heads, p.head_dim}, 1, 0, 0.0, 1.0, DType::kBF16, Device::cuda());
    k = Tensor::normal({tokens, p.kv_heads, p.head_dim}, 2, 0, 0.0, 1.0, DType::kBF16, Device::cuda());
    v = Tensor::normal({tokens, p.kv_heads, p.head_dim}, 3, 0, 0.0, 1.0, DType::kBF16, Device::cuda());
    grad_out = Tensor::normal({tokens, p.heads, p.head_dim}, 4, 0, 0.0, 1.0, DType::kBF16, Device::cuda());
    out = Tensor::empty(q.shape(), DType::kBF16, Device::cuda());
    stats = Tensor::empty({p.batch, p.heads, p.seqlen}, DType::kF32, Device::cuda());
    grad_q = Tensor::empty(q.shape(), DType::kBF16, Device::cuda());
    grad_k = Tensor::empty(k.shape(), DType::kBF16, Device::cuda());
    grad_v = Tensor::empty(v.shape(), DType::kBF16, Device::cuda());
    shape.dtype = DType::kBF16;
    shape.batch = p.batch;
    shape.num_heads = p.heads;
    shape.num_kv_heads = p.kv_heads;
    shape.head_dim = p.head_dim;
    shape.max_seqlen = p.seqlen;
    shape.causal = true;
    shape.deterministic = deterministic;
    scale = 1.0f / std::sqrt(static_cast<float>(p.head_dim));
  }
  void forward() const {
    cuda::CudnnAttentionForwardArgs a;
    a.q = q.data_ptr();
    a.k = k.data_ptr();
    a.v = v.data_ptr();
    a.out = out.data_ptr();
    a.stats = stats.data<float>();
    a.softmax_scale = scale;
    cuda::cudnn_attention_forward(shape, a, nullptr);
  }
  void backward() const {
    cuda::CudnnAttentionBackwardArgs a;
    a.q = q.data_ptr();
    a.k = k.data_ptr();
    a.v = v.data_ptr();
    a.out = out.data_ptr();
    a.grad_out = grad_out.data_ptr();
    a.stats = stats.data<float>();
    a.grad_q = grad_q.data_ptr();
    a.grad_k = grad_k.data_ptr();
    a.grad_v = grad_v.data_ptr();
    a.softmax_scale = scale;
    cuda::cudnn_attention_backward(shape, a, nullptr);
  }
};

void BM_CudnnAttentionFwd(benchmark::State& state, Problem p) {
  if (!cuda_available()) return state.SkipWithError("no CUDA GPU");
  Buffers buffers(p, false);
  bench::time_on_gpu(state, [&] { buffers.forward(); });
  bench::report_tflops(state, p.forward_flops());
}

void fwd_bwd(benchmark::State& state, Problem p, bool deterministic) {
  if (!cuda_available()) return state.SkipWithError("no CUDA GPU");
  Buffers buffers(p, deterministic);
  bench::time_on_gpu(state, [&] {
    buffers.forward();
    buffers.backward();
  });
  bench::report_tflops(state, 3.5 * p.forward_flops());
}

void BM_CudnnAttentionFwdBwd(benchmark::State& state, Problem p) { fwd_bwd(state, p, false); }
void BM_CudnnAttentionFwdBwdDeterministic(benchmark::State& state, Problem p) { fwd_bwd(state, p, true); }

#define ZT_CUDNN_ATTENTION_SHAPES(bench)                                                                  \
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

ZT_CUDNN_ATTENTION_SHAPES(BM_CudnnAttentionFwd);
ZT_CUDNN_ATTENTION_SHAPES(BM_CudnnAttentionFwdBwd);
ZT_CUDNN_ATTENTION_SHAPES(BM_CudnnAttentionFwdBwdDeterministic);

}  // namespace
}  // namespace zt
