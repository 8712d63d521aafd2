// What every GPU benchmark shares: event timing on the default stream, the copy ceiling of
// this run (cudaMemcpy device to device, bytes read + written) measured once per process, and
// counters that report a result as a share of that ceiling or of a FLOP count. Inputs larger
// than the 60 MiB L2 are used where a kernel streams memory; where one input set would fit in
// L2, a benchmark rotates through several sets (RotatingSets) so the cache is not what it
// measures.
#pragma once

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/check.h"
#include "runtime/device.h"
#include "runtime/streams/stream.h"
#include "tensor/tensor.h"

namespace zt::bench {

// Runs work() once to warm up, then times each iteration with events; returns nothing, sets
// the benchmark's manual time. Register the benchmark with ->UseManualTime().
template <typename F>
void time_on_gpu(benchmark::State& state, F&& work) {
  work();
  Event start(true), stop(true);
  for (auto _ : state) {
    start.record(nullptr);
    work();
    stop.record(nullptr);
    stop.synchronize();
    state.SetIterationTime(start.elapsed_ms(stop) / 1e3);
  }
}

// Device-to-device copy bandwidth in bytes/s (read + written) over 1 GiB, measured once.
inline double copy_ceiling_bytes_per_second() {
  static const double ceiling = [] {
    const std::size_t bytes = std::size_t{1} << 30;
    Tensor src = Tensor::zeros({static_cast<std::int64_t>(bytes / 4)}, DType::kF32, Device::cuda());
    Tensor dst = Tensor::empty({static_cast<std::int64_t>(bytes / 4)}, DType::kF32, Device::cuda());
    Event start(true), stop(true);
    auto copy = [&] {
      ZT_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), bytes, cudaMemcpyDeviceToDevice, nullptr));
    };
    copy();
    constexpr int kRepeats = 20;
    start.record(nullptr);
    for (int i = 0; i < kRepeats; ++i) copy();
    stop.record(nullptr);
    stop.synchronize();
    return 2.0 * static_cast<double>(bytes) * kRepeats / (start.elapsed_ms(stop) / 1e3);
  }();
  return ceiling;
}

// Reports bytes/s and the share of the copy ceiling for `bytes_per_iteration` moved.
inline void report_bandwidth(benchmark::State& state, double bytes_per_iteration) {
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes_per_iteration * static_cast<double>(state.iterations())));
  state.counters["of_copy_ceiling"] = benchmark::Counter(
      bytes_per_iteration * static_cast<double>(state.iterations()) / copy_ceiling_bytes_per_second(),
      benchmark::Counter::kIsRate);
}

// Reports TFLOP/s for `flops_per_iteration`.
inline void report_tflops(benchmark::State& state, double flops_per_iteration) {
  state.counters["TFLOP/s"] = benchmark::Counter(flops_per_iteration * static_cast<double>(state.iterations()) / 1e12,
                                                 benchmark::Counter::kIsRate);
}

// `count` independent copies of a benchmark's inputs, cycled through so each iteration reads
// data that is not in L2. make(i) builds set i.
template <typename Set>
class RotatingSets {
 public:
  template <typename Make>
  RotatingSets(int count, Make&& make) {
    for (int i = 0; i < count; ++i) sets_.push_back(make(i));
  }
  Set& next() { return sets_[next_++ % sets_.size()]; }

 private:
  std::vector<Set> sets_;
  std::size_t next_ = 0;
};

}  // namespace zt::bench
