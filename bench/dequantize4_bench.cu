// QLoRA's base linears on the GPU: the 4-bit weight dequantized to bfloat16 by cuda/quant4's
// kernel, then the bf16 product through cuBLASLt (dequantize-then-cuBLAS: prefill and
// training), the 4-bit GEMV on the packed weight (a decode step of up to 8 rows), against the
// same product on a bf16 weight already in memory (plain bf16 LoRA's base). Qwen2.5-7B's layer
// shapes, NF4 with double quantization; at 1 and 8 rows (decode steps) and 2048 rows (a
// training micro-batch of 2048 tokens). The timings per layer and row count:
//   dequantize        the kernel alone; bytes: the codes and scales read, the bf16 weight written
//   dequantize_gemm   the kernel then the product (what a QLoRA forward of many rows runs per
//                     linear); bytes as dequantize's
//   gemv4             the 4-bit GEMV (what a decode step runs); bytes: the codes and scales, x
//                     and y: its copy_fraction is how near the packed weight streams at the
//                     copy rate
//   bf16_gemm         the product on a bf16 weight (the ceiling a fused kernel aims at); bytes:
//                     the bf16 weight
// Weight sets rotate so that each iteration reads from DRAM.
//   build/bench/dequantize4_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "bench/gpu_bench.h"
#include "cuda/gemm/cublaslt_gemm.h"
#include "models/quant/quantized_weight.h"
#include "runtime/device.h"
#include "runtime/streams/current_stream.h"
#include "tensor/tensor.h"

namespace zt::bench {
namespace {

using models::quant::Quant4Weight;

struct Layer {
  const char* name;
  std::int64_t k, n;  // in_features, out_features
  double numel() const { return static_cast<double>(k) * static_cast<double>(n); }
};

const Layer kLayers[] = {
    {"Qwen7B_q", 3584, 3584},
    {"Qwen7B_kv", 3584, 512},
    {"Qwen7B_gate", 3584, 18944},
    {"Qwen7B_down", 18944, 3584},
};

// Quantized on the CPU once per layer, copied to the GPU for each rotating set.
Quant4Weight quantized(const Layer& l) {
  const Tensor w = Tensor::normal({l.n, l.k}, 5, 0, 0.0, 0.02, DType::kBF16);
  return models::quant::quantize_weight(w, {.type = ops::quant4::Quant4Type::kNf4, .double_quant = true}, "w");
}

int sets_for(double bytes) { return std::clamp(static_cast<int>(std::ceil(256.0 * (1 << 20) / bytes)), 1, 16); }

void gemm_into(const Layer& l, const Tensor& x, const Tensor& weight, Tensor& out) {
  const std::int64_t rows = x.size(0);
  cuda::gemm(DType::kBF16, {x.data_ptr(), rows, l.k, l.k, 0, false}, {weight.data_ptr(), l.n, l.k, l.k, 0, true},
             {out.data_ptr(), rows, l.n, l.n, 0}, 1, nullptr, current_stream());
}

void BM_Dequantize(benchmark::State& state, const Layer& l, bool with_gemm) {
  if (!cuda_available()) return state.SkipWithError("no CUDA GPU");
  const std::int64_t rows = state.range(0);
  const Quant4Weight cpu = quantized(l);
  RotatingSets<Quant4Weight> weights(sets_for(l.numel() / 2), [&](int) { return cpu.to(Device::cuda()); });
  const Tensor x = Tensor::normal({rows, l.k}, 1, 0, 0.0, 1.0, DType::kBF16, Device::cuda());
  Tensor out = Tensor::empty({rows, l.n}, DType::kBF16, Device::cuda());
  time_on_gpu(state, [&] {
    const Tensor dense = weights.next().dequantize(DType::kBF16);
    if (with_gemm) gemm_into(l, x, dense, out);
  });
  report_bandwidth(state, static_cast<double>(cpu.nbytes()) + 2 * l.numel());
  state.counters["4bit_MiB"] = static_cast<double>(cpu.nbytes()) / (1 << 20);
}

void BM_Gemv4(benchmark::State& state, const Layer& l) {
  if (!cuda_available()) return state.SkipWithError("no CUDA GPU");
  const std::int64_t rows = state.range(0);
  const Quant4Weight cpu = quantized(l);
  RotatingSets<Quant4Weight> weights(sets_for(l.numel() / 2), [&](int) { return cpu.to(Device::cuda()); });
  const Tensor x = Tensor::normal({rows, l.k}, 1, 0, 0.0, 1.0, DType::kBF16, Device::cuda());
  time_on_gpu(state, [&] { weights.next().linear(x); });
  report_bandwidth(state, static_cast<double>(cpu.nbytes()) + 2.0 * static_cast<double>(rows * (l.k + l.n)));
  state.counters["4bit_MiB"] = static_cast<double>(cpu.nbytes()) / (1 << 20);
}

void BM_Bf16Gemm(benchmark::State& state, const Layer& l) {
  if (!cuda_available()) return state.SkipWithError("no CUDA GPU");
  const std::int64_t rows = state.range(0);
  RotatingSets<Tensor> weights(sets_for(2 * l.numel()), [&](int i) {
    return Tensor::normal({l.n, l.k}, 10 + i, 0, 0.0, 0.02, DType::kBF16, Device::cuda());
  });
  const Tensor x = Tensor::normal({rows, l.k}, 1, 0, 0.0, 1.0, DType::kBF16, Device::cuda());
  Tensor out = Tensor::empty({rows, l.n}, DType::kBF16, Device::cuda());
  time_on_gpu(state, [&] { gemm_into(l, x, weights.next(), out); });
  report_bandwidth(state, 2 * l.numel());
}

const bool kRegistered = [] {
  for (const Layer& l : kLayers) {
    const std::string name = l.name;
    auto configure = [](benchmark::internal::Benchmark* b, std::initializer_list<std::int64_t> rows) {
      b->ArgName("rows")->UseManualTime()->Unit(benchmark::kMicrosecond);
      for (std::int64_t r : rows) b->Arg(r);
    };
    configure(benchmark::RegisterBenchmark((name + "/dequantize").c_str(), BM_Dequantize, l, false), {1, 2048});
    configure(benchmark::RegisterBenchmark((name + "/dequantize_gemm").c_str(), BM_Dequantize, l, true), {1, 8, 2048});
    configure(benchmark::RegisterBenchmark((name + "/gemv4").c_str(), BM_Gemv4, l), {1, 8});
    configure(benchmark::RegisterBenchmark((name + "/bf16_gemm").c_str(), BM_Bf16Gemm, l), {1, 8, 2048});
  }
  return true;
}();

}  // namespace
}  // namespace zt::bench
