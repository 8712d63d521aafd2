// Tensor copies and casts against the copy ceiling (cudaMemcpy device to device) of the
// same run. Bytes counted are bytes read plus bytes written, as DEVICE.md counts them.
#include <benchmark/benchmark.h>

#include "bench/gpu_bench.h"
#include "runtime/check.h"
#include "runtime/device.h"
#include "runtime/streams/stream.h"
#include "tensor/tensor.h"

namespace zt {
namespace {

constexpr std::int64_t kElements = std::int64_t{1} << 28;  // 1 GiB of f32: far past the 60 MiB L2

template <typename F>
void time_on_gpu(benchmark::State& state, std::size_t bytes_moved, F&& work) {
  bench::time_on_gpu(state, work);
  bench::report_bandwidth(state, static_cast<double>(bytes_moved));
}

void BM_CudaMemcpyCeiling(benchmark::State& state) {
  if (!cuda_available()) return state.SkipWithError("no CUDA GPU");
  Tensor src = Tensor::zeros({kElements}, DType::kF32, Device::cuda());
  Tensor dst = Tensor::empty({kElements}, DType::kF32, Device::cuda());
  time_on_gpu(state, 2 * src.nbytes(), [&] {
    ZT_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), src.nbytes(), cudaMemcpyDeviceToDevice, nullptr));
  });
}

void BM_CastF32ToBF16(benchmark::State& state) {
  if (!cuda_available()) return state.SkipWithError("no CUDA GPU");
  Tensor src = Tensor::zeros({kElements}, DType::kF32, Device::cuda());
  Tensor dst = Tensor::empty({kElements}, DType::kBF16, Device::cuda());
  time_on_gpu(state, src.nbytes() + dst.nbytes(), [&] { dst.copy_from_async(src, nullptr); });
}

void BM_TransposeCopyF32(benchmark::State& state) {
  if (!cuda_available()) return state.SkipWithError("no CUDA GPU");
  Tensor src = Tensor::zeros({16384, 16384}, DType::kF32, Device::cuda());
  Tensor dst = Tensor::empty({16384, 16384}, DType::kF32, Device::cuda());
  Tensor transposed = src.transpose(0, 1);
  time_on_gpu(state, 2 * src.nbytes(), [&] { dst.copy_from_async(transposed, nullptr); });
}

void BM_HostToDevicePinned(benchmark::State& state) {
  if (!cuda_available()) return state.SkipWithError("no CUDA GPU");
  Tensor host = Tensor::empty_pinned({std::int64_t{1} << 26}, DType::kF32);
  host.zero_();
  Tensor device = Tensor::empty({std::int64_t{1} << 26}, DType::kF32, Device::cuda());
  time_on_gpu(state, host.nbytes(), [&] { device.copy_from_async(host, nullptr); });
}

void BM_HostCastF32ToBF16(benchmark::State& state) {
  Tensor src = Tensor::zeros({std::int64_t{1} << 24}, DType::kF32);
  Tensor dst = Tensor::empty({std::int64_t{1} << 24}, DType::kBF16);
  for (auto _ : state) dst.copy_from(src);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * (src.nbytes() + dst.nbytes())));
}

BENCHMARK(BM_CudaMemcpyCeiling)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CastF32ToBF16)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TransposeCopyF32)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HostToDevicePinned)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HostCastF32ToBF16)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace zt
