// RoPE at Qwen2.5-7B's shapes: q [16384 tokens, 28 heads, 128], k [16384, 4, 128], bf16,
// rotate-half, forward then backward. In place on q and k together (one launch a
// direction) and out of place one tensor at a time (two launches a direction). Bytes: q and
// k read and written once per direction.
#include "bench/gpu_bench.h"
#include "ops/rope/rope.h"

namespace zt::bench {
namespace {

constexpr std::int64_t kTokens = 4 * 4096, kQHeads = 28, kKHeads = 4, kHeadDim = 128;
constexpr double kBytes = 2.0 * 2.0 * (kQHeads + kKHeads) * kHeadDim * kTokens * 2;  // 2 directions x (read + write)

// Four packed sequences of 4096 tokens.
Tensor packed_positions() {
  std::vector<double> p(kTokens);
  for (std::int64_t t = 0; t < kTokens; ++t) p[t] = static_cast<double>(t % 4096);
  return Tensor::from_values(p, {kTokens}, DType::kI64).to(Device::cuda());
}

struct Inputs {
  Tensor q = Tensor::normal({kTokens, kQHeads, kHeadDim}, 1, 0, 0.0, 1.0, DType::kBF16, Device::cuda());
  Tensor k = Tensor::normal({kTokens, kKHeads, kHeadDim}, 2, 0, 0.0, 1.0, DType::kBF16, Device::cuda());
  Tensor positions = packed_positions();
  ops::RopeConfig config{ops::RopeStyle::kRotateHalf, 1e6, 1.0};
};

void BM_RopeInPlaceQKForwardBackward(benchmark::State& state) {
  Inputs in;
  time_on_gpu(state, [&] {
    ops::rope_forward_inplace(in.q, in.k, in.positions, in.config);
    ops::rope_backward_inplace(in.q, in.k, in.positions, in.config);
  });
  report_bandwidth(state, kBytes);
}

void BM_RopeOutOfPlaceForwardBackward(benchmark::State& state) {
  Inputs in;
  time_on_gpu(state, [&] {
    Tensor q = ops::rope_forward(in.q, in.positions, in.config), k = ops::rope_forward(in.k, in.positions, in.config);
    ops::rope_backward(q, in.positions, in.config);
    ops::rope_backward(k, in.positions, in.config);
  });
  report_bandwidth(state, kBytes);
}

BENCHMARK(BM_RopeInPlaceQKForwardBackward)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RopeOutOfPlaceForwardBackward)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace zt::bench
