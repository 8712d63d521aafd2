// Causal attention, bfloat16, equal-length sequences in the packed layout, timed on the kernels
// themselves (cuda/ entry points on preallocated buffers, no host-side checks): the tensor-core
// forward, forward + backward with atomic and with deterministic dQ, and the simple kernels at
// one shape for the version ladder in docs/ATTENTION.md. Shapes and FLOP counts:
// bench/attention_problem.h.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "bench/attention_problem.h"
#include "cuda/attention/flash/flash_attention.cuh"
#include "cuda/attention/hopper/hopper_attention.cuh"
#include "cuda/attention/simple/attention.cuh"
#include "cuda/common/hopper/hopper_support.h"
#include "tensor/tensor.h"

namespace zt {
namespace {

using bench::AttentionProblem;

struct Buffers : bench::RandomAttentionInputs {
  Tensor cu_seqlens, out, lse, grad_q, grad_k, grad_v, delta, lse_log2, dq_accum, key_sums;
  cuda::AttentionDims dims;

  explicit Buffers(const AttentionProblem& p) : RandomAttentionInputs(p) {
    const std::int64_t tokens = p.tokens();
    std::vector<double> offsets;
    for (int b = 0; b <= p.batch; ++b) offsets.push_back(static_cast<double>(b) * p.seqlen);
    cu_seqlens = Tensor::from_values(offsets, {p.batch + 1}, DType::kI32).to(Device::cuda());
    out = Tensor::empty(q.shape(), DType::kBF16, Device::cuda());
    lse = Tensor::empty({tokens, p.heads}, DType::kF32, Device::cuda());
    grad_q = Tensor::empty(q.shape(), DType::kBF16, Device::cuda());
    grad_k = Tensor::empty(k.shape(), DType::kBF16, Device::cuda());
    grad_v = Tensor::empty(v.shape(), DType::kBF16, Device::cuda());
    delta = Tensor::empty({tokens, p.heads}, DType::kF32, Device::cuda());
    lse_log2 = Tensor::empty({p.heads, tokens}, DType::kF32, Device::cuda());
    dq_accum = Tensor::empty(q.shape(), DType::kF32, Device::cuda());
    dims.total_tokens = tokens;
    dims.batch = p.batch;
    dims.num_heads = p.heads;
    dims.num_kv_heads = p.kv_heads;
    dims.head_dim = p.head_dim;
    dims.max_seqlen = p.seqlen;
    dims.softmax_scale = p.softmax_scale();
    dims.causal = true;
    const std::int64_t key_sum_floats = cuda::hopper_backward_key_sum_floats(dims);
    if (key_sum_floats > 0) key_sums = Tensor::empty({key_sum_floats}, DType::kF32, Device::cuda());
  }
  cuda::AttentionInputs inputs() const {
    return {q.data_ptr(), k.data_ptr(), v.data_ptr(), nullptr, nullptr, cu_seqlens.data<std::int32_t>()};
  }
  cuda::AttentionGradOutputs grads() const { return {grad_q.data_ptr(), grad_k.data_ptr(), grad_v.data_ptr()}; }
  void flash_forward() const {
    cuda::flash_attention_forward(dims, inputs(), DType::kBF16, out.data_ptr(), lse.data<float>(), nullptr);
  }
  void flash_backward(bool deterministic) const {
    cuda::flash_attention_backward(dims, inputs(), DType::kBF16, out.data_ptr(), grad_out.data_ptr(), lse.data<float>(),
                                   {delta.data<float>(), dq_accum.data<float>()}, grads(), deterministic, nullptr);
  }
  void hopper_forward() const {
    cuda::hopper_attention_forward(dims, inputs(), DType::kBF16, out.data_ptr(), lse.data<float>(), nullptr);
  }
  // split_heads: a GQA group's heads spread over blocks when the backward would choose to
  // (its default in ops), or one block per (key tile, kv head) as before.
  void hopper_backward(bool split_heads = true) const {
    float* sums = split_heads && key_sums.defined() ? key_sums.data<float>() : nullptr;
    cuda::hopper_attention_backward(
        dims, inputs(), DType::kBF16, out.data_ptr(), grad_out.data_ptr(), lse.data<float>(),
        {lse_log2.data<float>(), delta.data<float>(), dq_accum.data<float>(), sums}, grads(), nullptr);
  }
  void simple_forward() const {
    cuda::attention_forward(dims, inputs(), DType::kBF16, out.data_ptr(), lse.data<float>(), nullptr);
  }
  void simple_backward() const {
    cuda::attention_backward(dims, inputs(), DType::kBF16, out.data_ptr(), grad_out.data_ptr(), lse.data<float>(),
                             delta.data<float>(), grads(), nullptr);
  }
};

template <typename Run>
void time_buffers(benchmark::State& state, const AttentionProblem& p, double flops, Run&& run) {
  bench::time_attention(
      state, flops, [&] { return Buffers(p); }, run);
}

void BM_AttentionFwd(benchmark::State& state, AttentionProblem p) {
  time_buffers(state, p, p.forward_flops(), [](const Buffers& b) { b.flash_forward(); });
}

void BM_AttentionFwdBwd(benchmark::State& state, AttentionProblem p) {
  time_buffers(state, p, p.forward_backward_flops(), [](const Buffers& b) {
    b.flash_forward();
    b.flash_backward(false);
  });
}

void BM_AttentionFwdBwdDeterministic(benchmark::State& state, AttentionProblem p) {
  time_buffers(state, p, p.forward_backward_flops(), [](const Buffers& b) {
    b.flash_forward();
    b.flash_backward(true);
  });
}

// The Hopper kernels (sm_90 with sm_90a code only): the forward alone, and forward + backward.
void BM_AttentionHopperFwd(benchmark::State& state, AttentionProblem p) {
  if (cuda_available() && !cuda::hopper::hopper_kernels_available())
    return state.SkipWithError("not a compute-capability-9.0 GPU with sm_90a code");
  time_buffers(state, p, p.forward_flops(), [](const Buffers& b) { b.hopper_forward(); });
}

void BM_AttentionHopperFwdBwd(benchmark::State& state, AttentionProblem p) {
  if (cuda_available() && !cuda::hopper::hopper_kernels_available())
    return state.SkipWithError("not a compute-capability-9.0 GPU with sm_90a code");
  time_buffers(state, p, p.forward_backward_flops(), [](const Buffers& b) {
    b.hopper_forward();
    b.hopper_backward();
  });
}

// The backward with every head of a GQA group in one block (no key-sum scratch): the rung
// before the heads were split, measured beside it.
void BM_AttentionHopperFwdBwdWholeGroups(benchmark::State& state, AttentionProblem p) {
  if (cuda_available() && !cuda::hopper::hopper_kernels_available())
    return state.SkipWithError("not a compute-capability-9.0 GPU with sm_90a code");
  time_buffers(state, p, p.forward_backward_flops(), [](const Buffers& b) {
    b.hopper_forward();
    b.hopper_backward(false);
  });
}

// Packed sequences of uneven lengths (the 8192 tokens of B4 S2048 as 1024, 3072, 1536 and 2560)
// at H16 D128, TFLOP/s over the causal products of each sequence: the training path, to compare
// with the equal-length shape of the same token count.
void BM_AttentionHopperVarlen(benchmark::State& state, bool with_backward) {
  if (cuda_available() && !cuda::hopper::hopper_kernels_available())
    return state.SkipWithError("not a compute-capability-9.0 GPU with sm_90a code");
  const std::vector<int> lengths = {1024, 3072, 1536, 2560};
  const AttentionProblem p{1, 16, 16, 8192, 128};
  double flops = 0.0;
  for (int length : lengths) flops += 4.0 * p.heads * static_cast<double>(length) * length * p.head_dim / 2.0;
  bench::time_attention(
      state, with_backward ? 3.5 * flops : flops,
      [&] {
        Buffers b(p);
        std::vector<double> offsets{0.0};
        for (int length : lengths) offsets.push_back(offsets.back() + length);
        b.cu_seqlens = Tensor::from_values(offsets, {5}, DType::kI32).to(Device::cuda());
        b.dims.batch = 4;
        b.dims.max_seqlen = 3072;
        return b;
      },
      [&](const Buffers& b) {
        b.hopper_forward();
        if (with_backward) b.hopper_backward();
      });
}

void BM_AttentionSimpleFwd(benchmark::State& state, AttentionProblem p) {
  time_buffers(state, p, p.forward_flops(), [](const Buffers& b) { b.simple_forward(); });
}

void BM_AttentionSimpleFwdBwd(benchmark::State& state, AttentionProblem p) {
  time_buffers(state, p, p.forward_backward_flops(), [](const Buffers& b) {
    b.simple_forward();
    b.simple_backward();
  });
}

ZT_ATTENTION_SHAPES(BM_AttentionFwd);
ZT_ATTENTION_SHAPES(BM_AttentionFwdBwd);
ZT_ATTENTION_SHAPES(BM_AttentionFwdBwdDeterministic);
ZT_ATTENTION_SHAPES(BM_AttentionHopperFwd);
ZT_ATTENTION_SHAPES(BM_AttentionHopperFwdBwd);
// GQA at the training shapes of Qwen2.5-1.5B (12 heads : 2) and Qwen2.5-0.5B (14 : 2, head_dim
// 64), split and whole.
BENCHMARK_CAPTURE(BM_AttentionHopperFwdBwd, Qwen15B_B4_H12_KV2_S2048_D128, AttentionProblem{4, 12, 2, 2048, 128})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AttentionHopperFwdBwdWholeGroups, Qwen15B_B4_H12_KV2_S2048_D128,
                  AttentionProblem{4, 12, 2, 2048, 128})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AttentionHopperFwdBwd, Qwen05B_B4_H14_KV2_S2048_D64, AttentionProblem{4, 14, 2, 2048, 64})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AttentionHopperFwdBwdWholeGroups, Qwen05B_B4_H14_KV2_S2048_D64,
                  AttentionProblem{4, 14, 2, 2048, 64})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AttentionHopperFwdBwdWholeGroups, B4_H16_KV2_S2048_D128, AttentionProblem{4, 16, 2, 2048, 128})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AttentionHopperVarlen, Fwd_H16_D128_8192_tokens, false)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AttentionHopperVarlen, FwdBwd_H16_D128_8192_tokens, true)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AttentionSimpleFwd, B4_H16_S2048_D128, AttentionProblem{4, 16, 16, 2048, 128})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AttentionSimpleFwdBwd, B4_H16_S2048_D128, AttentionProblem{4, 16, 16, 2048, 128})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace zt
