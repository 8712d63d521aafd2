// The fused linear + cross-entropy (forward with both gradients, then the backward that
// scales them) against its ceiling: the same three GEMMs alone through cuda::gemm (logits =
// h·Wᵀ, dh = dlogits·W, dW = dlogitsᵀ·h, bfloat16 in and out), which is the arithmetic any
// lm_head loss must do. Counters:
//   x_gemms          fused time / the three GEMMs' time (goal <= 1.15)
//   peak_bytes       the most the op held beyond its inputs, outputs included
//   extra_bytes      peak_bytes minus the gradients an unfused bfloat16 run also returns
//   extra_of_budget  extra_bytes / (1/8 of the unfused float32 logits + their gradient,
//                    2·T·V·4 bytes) (goal <= 1)
#include <benchmark/benchmark.h>

#include "bench/gpu_bench.h"
#include "cuda/gemm/cublaslt_gemm.h"
#include "ops/loss/linear_cross_entropy.h"
#include "runtime/check.h"
#include "runtime/device.h"
#include "runtime/memory/caching_allocator.h"
#include "runtime/streams/stream.h"
#include "tensor/tensor.h"

namespace zt {
namespace {

// Mean milliseconds of `work` over a few runs after one warm-up.
template <typename F>
double mean_ms(F&& work, int repeats = 5) {
  work();
  Event start(true), stop(true);
  start.record(nullptr);
  for (int i = 0; i < repeats; ++i) work();
  stop.record(nullptr);
  stop.synchronize();
  return start.elapsed_ms(stop) / repeats;
}

struct Shape3 {
  std::int64_t tokens, vocab, hidden;
};

Shape3 shape_of(const benchmark::State& state) { return {state.range(0), state.range(1), state.range(2)}; }

struct Inputs {
  Tensor hidden, weight, labels;
};

Inputs make_inputs(const Shape3& s) {
  Tensor labels =
      Tensor::uniform({s.tokens}, 3, 0, 0.0, static_cast<double>(s.vocab) - 1.0, DType::kF32, Device::cuda())
          .to(DType::kI64);
  return {Tensor::normal({s.tokens, s.hidden}, 1, 0, 0.0, 1.0, DType::kBF16, Device::cuda()),
          Tensor::normal({s.vocab, s.hidden}, 2, 0, 0.0, 0.05, DType::kBF16, Device::cuda()), labels};
}

// The three products of an lm_head's forward and backward, in bfloat16, on full [T, V] logits.
struct ThreeGemms {
  Tensor logits, grad_hidden, grad_weight;
  explicit ThreeGemms(const Shape3& s)
      : logits(Tensor::empty({s.tokens, s.vocab}, DType::kBF16, Device::cuda())),
        grad_hidden(Tensor::empty({s.tokens, s.hidden}, DType::kBF16, Device::cuda())),
        grad_weight(Tensor::empty({s.vocab, s.hidden}, DType::kBF16, Device::cuda())) {}
  void run(const Inputs& in, const Shape3& s) {
    const std::int64_t t = s.tokens, v = s.vocab, h = s.hidden;
    cuda::GemmOperand hidden{in.hidden.data_ptr(), t, h, h, 0, false};
    cuda::GemmOperand weight{in.weight.data_ptr(), v, h, h, 0, false};
    cuda::GemmOperand weight_t{in.weight.data_ptr(), v, h, h, 0, true};
    cuda::GemmOperand dlogits{logits.data_ptr(), t, v, v, 0, false};
    cuda::GemmOperand dlogits_t{logits.data_ptr(), t, v, v, 0, true};
    cuda::gemm(DType::kBF16, hidden, weight_t, {logits.data_ptr(), t, v, v, 0}, 1, nullptr, nullptr);
    cuda::gemm(DType::kBF16, dlogits, weight, {grad_hidden.data_ptr(), t, h, h, 0}, 1, nullptr, nullptr);
    cuda::gemm(DType::kBF16, dlogits_t, hidden, {grad_weight.data_ptr(), v, h, h, 0}, 1, nullptr, nullptr);
  }
};

double gemm_flops(const Shape3& s) {
  return 3.0 * 2.0 * static_cast<double>(s.tokens) * static_cast<double>(s.vocab) * static_cast<double>(s.hidden);
}

void BM_ThreeGemmsAlone(benchmark::State& state) {
  if (!cuda_available()) return state.SkipWithError("no CUDA GPU");
  Shape3 s = shape_of(state);
  Inputs in = make_inputs(s);
  ThreeGemms gemms(s);
  bench::time_on_gpu(state, [&] { gemms.run(in, s); });
  bench::report_tflops(state, gemm_flops(s));
}

void BM_FusedLinearCrossEntropy(benchmark::State& state) {
  if (!cuda_available()) return state.SkipWithError("no CUDA GPU");
  Shape3 s = shape_of(state);
  Inputs in = make_inputs(s);
  ops::LinearCrossEntropyOptions options;
  options.float32_logits = state.range(3) != 0;
  Tensor grad_loss = Tensor::full({}, 1.0, DType::kF32, Device::cuda());
  auto fused = [&] {
    ops::LinearCrossEntropyOutput out =
        ops::linear_cross_entropy_forward(in.hidden, in.weight, in.labels, options, {true, true});
    ops::LinearCrossEntropyGrads grads = ops::linear_cross_entropy_backward(grad_loss, out, DType::kBF16, options);
    benchmark::DoNotOptimize(grads.grad_weight.data_ptr());
  };

  double gemm_ms = 0.0;
  {
    ThreeGemms gemms(s);
    gemm_ms = mean_ms([&] { gemms.run(in, s); });
  }  // its [T, V] logits are gone before the fused op's memory is measured

  CachingDeviceAllocator& allocator = device_allocator(current_cuda_device());
  ZT_CUDA_CHECK(cudaDeviceSynchronize());
  const std::size_t before = allocator.stats().allocated_bytes;
  allocator.reset_peak_stats();
  fused();
  ZT_CUDA_CHECK(cudaDeviceSynchronize());
  const double peak = static_cast<double>(allocator.stats().peak_allocated_bytes - before);
  const double unfused_outputs = static_cast<double>((s.tokens + s.vocab) * s.hidden * 2);
  const double budget = 2.0 * static_cast<double>(s.tokens) * static_cast<double>(s.vocab) * 4.0 / 8.0;

  bench::time_on_gpu(state, fused);
  bench::report_tflops(state, gemm_flops(s));
  state.counters["x_gemms"] = mean_ms(fused) / gemm_ms;
  state.counters["peak_bytes"] = peak;
  state.counters["extra_bytes"] = peak - unfused_outputs;
  state.counters["extra_of_budget"] = (peak - unfused_outputs) / budget;
}

// {tokens, vocab, hidden}: the goal's shape (Qwen2.5-1.5B's tied lm_head at 16k tokens) and a
// quarter of it; the fused op also with float32 (1) or bfloat16 (0) chunk logits.
BENCHMARK(BM_ThreeGemmsAlone)
    ->Args({16384, 151936, 1536})
    ->Args({4096, 151936, 1536})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FusedLinearCrossEntropy)
    ->Args({16384, 151936, 1536, 1})
    ->Args({16384, 151936, 1536, 0})
    ->Args({4096, 151936, 1536, 1})
    ->Args({4096, 151936, 1536, 0})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace zt
