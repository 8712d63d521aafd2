// The CPU Adam of optimizer offload on 100M parameters with a bfloat16 working copy: plain
// C++ against AVX2 and AVX-512, one thread against all of them. Reports parameters/s and
// the memory traffic in GB/s (each parameter reads 16 bytes — master, two moments, gradient
// — and writes 14: those three back and the bfloat16 copy); the update is memory bound, so
// GB/s against the machine's stream bandwidth is its ceiling. An instruction set the CPU
// lacks is skipped. Beside it, the ceiling measured on the same host with the same threads:
// a STREAM-style copy (b[i] = a[i] over 400 MB arrays, 8 bytes moved per element) and a
// STREAM triad (a[i] = b[i] + s*c[i], 12 bytes), each split across a pool of the CPU Adam's
// size as the CPU Adam splits its elements.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <string>

#include "ops/optim/cpu_adam.h"
#include "ops/worker_pool.h"

namespace zt::ops {
namespace {

constexpr std::int64_t kParameters = 100'000'000;
constexpr double kBytesPerParameter = 16.0 + 14.0;

struct Buffers {
  Tensor master = Tensor::full({kParameters}, 0.5, DType::kF32);
  Tensor exp_avg = Tensor::zeros({kParameters}, DType::kF32);
  Tensor exp_avg_sq = Tensor::zeros({kParameters}, DType::kF32);
  Tensor grad = Tensor::full({kParameters}, 1e-3, DType::kF32);
  Tensor working = Tensor::zeros({kParameters}, DType::kBF16);
};

// Shared by every run, so the 1.8 GB are allocated and touched once.
Buffers& buffers() {
  static Buffers b;
  return b;
}

void cpu_adam_step(benchmark::State& state) {
  const auto isa = static_cast<CpuAdamIsa>(state.range(0));
  const int threads = state.range(1) == 0 ? default_cpu_adam_threads() : static_cast<int>(state.range(1));
  if (!cpu_supports(isa)) {
    state.SkipWithError((std::string("this CPU has no ") + cpu_adam_isa_name(isa)).c_str());
    return;
  }
  Buffers& b = buffers();
  CpuAdam adam(threads, isa);
  const std::vector<CpuAdamSpan> spans{{b.master.data<float>(), b.exp_avg.data<float>(), b.exp_avg_sq.data<float>(),
                                        b.grad.data<float>(), b.working.data_ptr(), DType::kBF16, kParameters, 0.01}};
  std::int64_t step = 0;
  for (auto _ : state) adam.step(spans, {.lr = 1e-4, .step = ++step});
  const double parameters = static_cast<double>(kParameters) * static_cast<double>(state.iterations());
  state.counters["parameters/s"] = benchmark::Counter(parameters, benchmark::Counter::kIsRate);
  state.counters["GB/s"] = benchmark::Counter(parameters * kBytesPerParameter / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(std::string(cpu_adam_isa_name(isa)) + ", " + std::to_string(threads) + " threads");
}

// (instruction set, threads; 0 = every hardware thread or ZT_CPU_ADAM_THREADS)
BENCHMARK(cpu_adam_step)
    ->ArgNames({"isa", "threads"})
    ->Args({static_cast<int>(CpuAdamIsa::kScalar), 1})
    ->Args({static_cast<int>(CpuAdamIsa::kAvx2), 1})
    ->Args({static_cast<int>(CpuAdamIsa::kAvx512), 1})
    ->Args({static_cast<int>(CpuAdamIsa::kScalar), 0})
    ->Args({static_cast<int>(CpuAdamIsa::kAvx2), 0})
    ->Args({static_cast<int>(CpuAdamIsa::kAvx512), 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MeasureProcessCPUTime();

// Element range [begin, end) of `share` out of `shares`, on 16-element boundaries.
std::pair<std::int64_t, std::int64_t> share_of(std::int64_t n, int share, int shares) {
  auto edge = [&](int k) { return std::min(n, (n * k / shares) & ~std::int64_t{15}); };
  return {edge(share), share + 1 == shares ? n : edge(share + 1)};
}

// STREAM's copy (arrays 0, 1) or triad (arrays 0, 1, 2) over the CPU Adam's buffers' floats.
void host_stream(benchmark::State& state) {
  const bool triad = state.range(0) == 1;
  const int threads = state.range(1) == 0 ? default_cpu_adam_threads() : static_cast<int>(state.range(1));
  Buffers& b = buffers();
  float* a = b.master.data<float>();
  const float* x = b.grad.data<float>();
  const float* y = b.exp_avg.data<float>();
  WorkerPool pool(threads);
  for (auto _ : state)
    pool.run([&](int t) {
      const auto [begin, end] = share_of(kParameters, t, pool.size());
      if (triad)
        for (std::int64_t i = begin; i < end; ++i) a[i] = x[i] + 0.5f * y[i];
      else
        std::copy(x + begin, x + end, a + begin);
    });
  benchmark::DoNotOptimize(a);
  const double bytes = (triad ? 12.0 : 8.0) * static_cast<double>(kParameters);
  state.counters["GB/s"] =
      benchmark::Counter(bytes * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(std::string(triad ? "triad" : "copy") + ", " + std::to_string(threads) + " threads");
}

// (0 copy / 1 triad, threads; 0 = the CPU Adam's default)
BENCHMARK(host_stream)
    ->ArgNames({"triad", "threads"})
    ->Args({0, 1})
    ->Args({0, 0})
    ->Args({1, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace zt::ops
