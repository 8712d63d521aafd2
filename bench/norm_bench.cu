// RMSNorm at a pretraining-sized activation, [16384 tokens, 4096] bf16: forward, backward,
// both, and the same with the residual add fused in front. Bytes are everything each op
// reads and writes once (inputs, outputs, the weight, rstd), not its scratch.
#include "bench/gpu_bench.h"
#include "ops/norm/rmsnorm.h"

namespace zt::bench {
namespace {

constexpr std::int64_t kRows = 16384, kHidden = 4096;
constexpr double kRow = static_cast<double>(kRows) * kHidden * 2;  // one bf16 [rows, hidden]
constexpr double kSmall = kHidden * 2 + kRows * 4;                 // weight + rstd

Tensor random(const Shape& shape, std::uint64_t seed, double mean = 0.0) {
  return Tensor::normal(shape, seed, 0, mean, 1.0, DType::kBF16, Device::cuda());
}

struct Inputs {
  Tensor x = random({kRows, kHidden}, 1), residual = random({kRows, kHidden}, 2), weight = random({kHidden}, 3, 1.0);
  Tensor grad_y = random({kRows, kHidden}, 4), grad_sum = random({kRows, kHidden}, 5);
};

void BM_RmsNormForward(benchmark::State& state) {
  Inputs in;
  time_on_gpu(state, [&] { ops::rmsnorm_forward(in.x, in.weight, 1e-6f, ops::RmsNormStyle::kQwen); });
  report_bandwidth(state, 2 * kRow + kSmall);
}

void BM_RmsNormBackward(benchmark::State& state) {
  Inputs in;
  ops::RmsNormOutput out = ops::rmsnorm_forward(in.x, in.weight, 1e-6f, ops::RmsNormStyle::kQwen);
  time_on_gpu(state, [&] { ops::rmsnorm_backward(in.grad_y, in.x, in.weight, out.rstd, ops::RmsNormStyle::kQwen); });
  report_bandwidth(state, 3 * kRow + kSmall + kHidden * 2);
}

void BM_RmsNormForwardBackward(benchmark::State& state) {
  Inputs in;
  time_on_gpu(state, [&] {
    ops::RmsNormOutput out = ops::rmsnorm_forward(in.x, in.weight, 1e-6f, ops::RmsNormStyle::kQwen);
    ops::rmsnorm_backward(in.grad_y, in.x, in.weight, out.rstd, ops::RmsNormStyle::kQwen);
  });
  report_bandwidth(state, 5 * kRow + 2 * kSmall + kHidden * 2);
}

void BM_RmsNormResidualForward(benchmark::State& state) {
  Inputs in;
  time_on_gpu(state,
              [&] { ops::rmsnorm_residual_forward(in.x, in.residual, in.weight, 1e-6f, ops::RmsNormStyle::kQwen); });
  report_bandwidth(state, 4 * kRow + kSmall);
}

void BM_RmsNormResidualForwardBackward(benchmark::State& state) {
  Inputs in;
  time_on_gpu(state, [&] {
    ops::RmsNormResidualOutput out =
        ops::rmsnorm_residual_forward(in.x, in.residual, in.weight, 1e-6f, ops::RmsNormStyle::kQwen);
    ops::rmsnorm_residual_backward(in.grad_y, in.grad_sum, out.sum, in.weight, out.rstd, ops::RmsNormStyle::kQwen);
  });
  report_bandwidth(state, 4 * kRow + kSmall + 4 * kRow + kSmall + kHidden * 2);
}

BENCHMARK(BM_RmsNormForward)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RmsNormBackward)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RmsNormForwardBackward)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RmsNormResidualForward)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RmsNormResidualForwardBackward)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace zt::bench
