// RMSNorm at two activation sizes, bf16: a pretraining-sized [16384 tokens, 4096] and
// Qwen2.5-1.5B's training micro-batch [8192, 1536]; forward, backward, both, and the same with
// the residual add fused in front. Bytes are everything each op reads and writes once
// (inputs, outputs, the weight, rstd), not its scratch. Arguments: rows, hidden.
#include "bench/gpu_bench.h"
#include "ops/norm/rmsnorm.h"

namespace zt::bench {
namespace {

Tensor random(const Shape& shape, std::uint64_t seed, double mean = 0.0) {
  return Tensor::normal(shape, seed, 0, mean, 1.0, DType::kBF16, Device::cuda());
}

struct Inputs {
  explicit Inputs(const benchmark::State& state)
      : rows(state.range(0)),
        hidden(state.range(1)),
        row_bytes(static_cast<double>(rows) * hidden * 2),
        small_bytes(static_cast<double>(hidden) * 2 + static_cast<double>(rows) * 4),
        x(random({rows, hidden}, 1)),
        residual(random({rows, hidden}, 2)),
        weight(random({hidden}, 3, 1.0)),
        grad_y(random({rows, hidden}, 4)),
        grad_sum(random({rows, hidden}, 5)) {}
  std::int64_t rows, hidden;
  double row_bytes;    // one bf16 [rows, hidden]
  double small_bytes;  // weight + rstd
  Tensor x, residual, weight, grad_y, grad_sum;
};

void BM_RmsNormForward(benchmark::State& state) {
  Inputs in(state);
  time_on_gpu(state, [&] { ops::rmsnorm_forward(in.x, in.weight, 1e-6f, ops::RmsNormStyle::kQwen); });
  report_bandwidth(state, 2 * in.row_bytes + in.small_bytes);
}

void BM_RmsNormBackward(benchmark::State& state) {
  Inputs in(state);
  ops::RmsNormOutput out = ops::rmsnorm_forward(in.x, in.weight, 1e-6f, ops::RmsNormStyle::kQwen);
  time_on_gpu(state, [&] { ops::rmsnorm_backward(in.grad_y, in.x, in.weight, out.rstd, ops::RmsNormStyle::kQwen); });
  report_bandwidth(state, 3 * in.row_bytes + in.small_bytes + static_cast<double>(in.hidden) * 2);
}

void BM_RmsNormForwardBackward(benchmark::State& state) {
  Inputs in(state);
  time_on_gpu(state, [&] {
    ops::RmsNormOutput out = ops::rmsnorm_forward(in.x, in.weight, 1e-6f, ops::RmsNormStyle::kQwen);
    ops::rmsnorm_backward(in.grad_y, in.x, in.weight, out.rstd, ops::RmsNormStyle::kQwen);
  });
  report_bandwidth(state, 5 * in.row_bytes + 2 * in.small_bytes + static_cast<double>(in.hidden) * 2);
}

void BM_RmsNormResidualForward(benchmark::State& state) {
  Inputs in(state);
  time_on_gpu(state,
              [&] { ops::rmsnorm_residual_forward(in.x, in.residual, in.weight, 1e-6f, ops::RmsNormStyle::kQwen); });
  report_bandwidth(state, 4 * in.row_bytes + in.small_bytes);
}

void BM_RmsNormResidualForwardBackward(benchmark::State& state) {
  Inputs in(state);
  time_on_gpu(state, [&] {
    ops::RmsNormResidualOutput out =
        ops::rmsnorm_residual_forward(in.x, in.residual, in.weight, 1e-6f, ops::RmsNormStyle::kQwen);
    ops::rmsnorm_residual_backward(in.grad_y, in.grad_sum, out.sum, in.weight, out.rstd, ops::RmsNormStyle::kQwen);
  });
  report_bandwidth(state, 4 * in.row_bytes + in.small_bytes + 4 * in.row_bytes + in.small_bytes +
                              static_cast<double>(in.hidden) * 2);
}

BENCHMARK(BM_RmsNormForward)->Args({16384, 4096})->Args({8192, 1536})->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RmsNormBackward)->Args({16384, 4096})->Args({8192, 1536})->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RmsNormForwardBackward)
    ->Args({16384, 4096})
    ->Args({8192, 1536})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RmsNormResidualForward)
    ->Args({16384, 4096})
    ->Args({8192, 1536})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RmsNormResidualForwardBackward)
    ->Args({16384, 4096})
    ->Args({8192, 1536})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace zt::bench
