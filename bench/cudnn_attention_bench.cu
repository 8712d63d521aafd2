// cuDNN's fused flash attention (attn_impl=cudnn), the strongest peer of zerotune's own
// kernels: the same shapes and names as bench/attention_bench.cu (causal, bfloat16,
// equal-length sequences, so cuDNN's dense layout), timed on the cuda/ entry points on
// preallocated buffers. The first call of a shape builds and caches its plan, outside the
// timing. Shapes and FLOP counts: bench/attention_problem.h.
#include <benchmark/benchmark.h>

#include "bench/attention_problem.h"
#include "cuda/attention/cudnn/cudnn_attention.h"
#include "tensor/tensor.h"

namespace zt {
namespace {

using bench::AttentionProblem;

struct Buffers : bench::RandomAttentionInputs {
  Tensor out, stats, grad_q, grad_k, grad_v;
  cuda::CudnnAttentionShape shape;
  float scale = 1.0f;

  Buffers(const AttentionProblem& p, bool deterministic) : RandomAttentionInputs(p) {
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
    scale = p.softmax_scale();
  }
  // The arguments both directions take (CudnnAttentionForwardArgs or ...BackwardArgs).
  template <typename Args>
  Args with_forward_tensors(Args a) const {
    a.q = q.data_ptr();
    a.k = k.data_ptr();
    a.v = v.data_ptr();
    a.out = out.data_ptr();
    a.stats = stats.data<float>();
    a.softmax_scale = scale;
    return a;
  }
  void forward() const {
    cuda::cudnn_attention_forward(shape, with_forward_tensors(cuda::CudnnAttentionForwardArgs{}), nullptr);
  }
  void backward() const {
    cuda::CudnnAttentionBackwardArgs a = with_forward_tensors(cuda::CudnnAttentionBackwardArgs{});
    a.grad_out = grad_out.data_ptr();
    a.grad_q = grad_q.data_ptr();
    a.grad_k = grad_k.data_ptr();
    a.grad_v = grad_v.data_ptr();
    cuda::cudnn_attention_backward(shape, a, nullptr);
  }
};

void BM_CudnnAttentionFwd(benchmark::State& state, AttentionProblem p) {
  bench::time_attention(
      state, p.forward_flops(), [&] { return Buffers(p, false); }, [](const Buffers& b) { b.forward(); });
}

void fwd_bwd(benchmark::State& state, AttentionProblem p, bool deterministic) {
  bench::time_attention(
      state, p.forward_backward_flops(), [&] { return Buffers(p, deterministic); },
      [](const Buffers& b) {
        b.forward();
        b.backward();
      });
}

void BM_CudnnAttentionFwdBwd(benchmark::State& state, AttentionProblem p) { fwd_bwd(state, p, false); }
void BM_CudnnAttentionFwdBwdDeterministic(benchmark::State& state, AttentionProblem p) { fwd_bwd(state, p, true); }

ZT_ATTENTION_SHAPES(BM_CudnnAttentionFwd);
ZT_ATTENTION_SHAPES(BM_CudnnAttentionFwdBwd);
ZT_ATTENTION_SHAPES(BM_CudnnAttentionFwdBwdDeterministic);

}  // namespace
}  // namespace zt
