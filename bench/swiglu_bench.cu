// SwiGLU at Qwen2.5-7B's MLP width, [16384 tokens, 18944] bf16: split gate/up forward and
// forward + backward, and GLM's fused [gate | up] layout. Bytes: every input read and every
// output written once (forward 3, backward 5 tensors of [tokens, ffn]).
#include "bench/gpu_bench.h"
#include "ops/swiglu/swiglu.h"

namespace zt::bench {
namespace {

constexpr std::int64_t kTokens = 16384, kFfn = 18944;
constexpr double kTensor = static_cast<double>(kTokens) * kFfn * 2;

Tensor random(const Shape& shape, std::uint64_t seed) {
  return Tensor::normal(shape, seed, 0, 0.0, 1.0, DType::kBF16, Device::cuda());
}

void BM_SwigluForward(benchmark::State& state) {
  Tensor gate = random({kTokens, kFfn}, 1), up = random({kTokens, kFfn}, 2);
  time_on_gpu(state, [&] { ops::swiglu_forward(gate, up); });
  report_bandwidth(state, 3 * kTensor);
}

void BM_SwigluForwardBackward(benchmark::State& state) {
  Tensor gate = random({kTokens, kFfn}, 1), up = random({kTokens, kFfn}, 2), grad = random({kTokens, kFfn}, 3);
  time_on_gpu(state, [&] {
    ops::swiglu_forward(gate, up);
    ops::swiglu_backward(grad, gate, up);
  });
  report_bandwidth(state, 8 * kTensor);
}

void BM_SwigluFusedForwardBackward(benchmark::State& state) {
  Tensor gate_up = random({kTokens, 2 * kFfn}, 1), grad = random({kTokens, kFfn}, 3);
  time_on_gpu(state, [&] {
    ops::swiglu_fused_forward(gate_up);
    ops::swiglu_fused_backward(grad, gate_up);
  });
  report_bandwidth(state, 8 * kTensor);
}

BENCHMARK(BM_SwigluForward)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SwigluForwardBackward)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SwigluFusedForwardBackward)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace zt::bench
