// QLoRA's base linears on the GPU: the 4-bit weight dequantized to bfloat16 by cuda/quant4's
// kernel, then the bf16 product through cuBLASLt (dequantize-then-cuBLAS: long prefills and
// training), the 4-bit GEMV on the packed weight (a decode step of up to 8 rows), the 4-bit
// GEMM on the packed weight (9 to kGemm4MaxRows rows: batched decode, short prefills,
// evaluation), against the same product on a bf16 weight already in memory (plain bf16 LoRA's
// base). Qwen2.5-7B's layer shapes, NF4 with double quantization; at 1 and 8 rows (decode
// steps), 16 to 256 rows (the GEMM's range, on q_proj, gate_proj and down_proj) and 2048 rows (a
// training micro-batch of 2048 tokens). The timings per layer and row count:
//   dequantize        the kernel alone; bytes: the codes and scales read, the bf16 weight written
//   dequantize_gemm   the kernel then the product (what a QLoRA forward of many rows runs per
//                     linear); bytes as dequantize's
//   gemv4             the 4-bit GEMV (what a decode step runs); bytes: the codes and scales, x
//                     and y: its copy_fraction is how near the packed weight streams at the
//                     copy rate
//   gemm4             the 4-bit GEMM, called directly (what a held layer runs on 9 to
//                     kGemm4MaxRows rows); bytes as gemv4's; kGemm4MaxRows is the most rows
//                     at which it beats dequantize_gemm
//   bf16_gemm         the product on a bf16 weight (the ceiling a fused kernel aims at); bytes:
//                     the bf16 weight
// Weight sets rotate so that each iteration reads from DRAM. TFLOP/s: 2 * rows * K * N.
//   build/bench/dequantize4_bench --benchmark_counters_tabular=true
//   build/bench/dequantize4_bench --benchmark_counters_tabular=true \
//       --benchmark_filter='(q|gate|down)/(gemm4|dequantize_gemm|bf16_gemm)/rows:(16|32|64|128|256)/'
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "bench/gpu_bench.h"
#include "cuda/gemm/cublaslt_gemm.h"
#include "cuda/quant4/gemm4.cuh"
#include "models/quant/quantized_weight.h"
#include "runtime/device.h"
#include "runtime/streams/current_stream.h"
#include "tensor/tensor.h"

namespace zt::bench {
namespace {

using models::quant::Quant4Weight;

struct Layer {
  const char* name;
  std::int64_t k, n;        // in_features, out_features
  bool gemm4_rows = false;  // also measured at the 4-bit GEMM's row counts
  double numel() const { return static_cast<double>(k) * static_cast<double>(n); }
  double flops(std::int64_t rows) const { return 2.0 * static_cast<double>(rows) * numel(); }
};

const Layer kLayers[] = {
    {"Qwen7B_q", 3584, 3584, true},
    {"Qwen7B_kv", 3584, 512, false},
    {"Qwen7B_gate", 3584, 18944, true},
    {"Qwen7B_down", 18944, 3584, true},
};

// Quantized on the CPU once per layer and process (a benchmark's function runs once per row
// count and again as it settles its iteration count), copied to the GPU for each rotating set.
const Quant4Weight& quantized(const Layer& l) {
  static std::map<std::string, Quant4Weight> done;
  auto found = done.find(l.name);
  if (found == done.end()) {
    const Tensor w = Tensor::normal({l.n, l.k}, 5, 0, 0.0, 0.02, DType::kBF16);
    found = done.emplace(l.name, models::quant::quantize_weight(
                                     w, {.type = ops::quant4::Quant4Type::kNf4, .double_quant = true}, "w"))
                .first;
  }
  return found->second;
}

int sets_for(double bytes) { return std::clamp(static_cast<int>(std::ceil(256.0 * (1 << 20) / bytes)), 1, 16); }

void gemm_into(const Layer& l, const Tensor& x, const Tensor& weight, Tensor& out) {
  const std::int64_t rows = x.size(0);
  cuda::gemm(DType::kBF16, {x.data_ptr(), rows, l.k, l.k, 0, false}, {weight.data_ptr(), l.n, l.k, l.k, 0, true},
             {out.data_ptr(), rows, l.n, l.n, 0}, 1, nullptr, current_stream());
}

// What each 4-bit benchmark reads: the layer quantized once, device copies of it rotated so a
// run reads memory rather than L2, x of the benchmark's rows and y.
struct FourBitInputs {
  FourBitInputs(const Layer& l, std::int64_t rows)
      : cpu(quantized(l)),
        weights(sets_for(l.numel() / 2), [this](int) { return cpu.to(Device::cuda()); }),
        x(Tensor::normal({rows, l.k}, 1, 0, 0.0, 1.0, DType::kBF16, Device::cuda())),
        out(Tensor::empty({rows, l.n}, DType::kBF16, Device::cuda())) {}

  // The codes and the activations moved (x read, y written), and the 4-bit size shown.
  void report(benchmark::State& state, const Layer& l, std::int64_t rows) const {
    report_bandwidth(state, static_cast<double>(cpu.nbytes()) + 2.0 * static_cast<double>(rows * (l.k + l.n)));
    report_tflops(state, l.flops(rows));
    state.counters["4bit_MiB"] = static_cast<double>(cpu.nbytes()) / (1 << 20);
  }

  const Quant4Weight& cpu;
  RotatingSets<Quant4Weight> weights;
  Tensor x, out;
};

void BM_Dequantize(benchmark::State& state, const Layer& l, bool with_gemm) {
  if (!cuda_available()) return state.SkipWithError("no CUDA GPU");
  const std::int64_t rows = state.range(0);
  FourBitInputs in(l, rows);
  time_on_gpu(state, [&] {
    const Tensor dense = in.weights.next().dequantize(DType::kBF16);
    if (with_gemm) gemm_into(l, in.x, dense, in.out);
  });
  report_bandwidth(state, static_cast<double>(in.cpu.nbytes()) + 2 * l.numel());
  if (with_gemm) report_tflops(state, l.flops(rows));
  state.counters["4bit_MiB"] = static_cast<double>(in.cpu.nbytes()) / (1 << 20);
}

void BM_Gemv4(benchmark::State& state, const Layer& l) {
  if (!cuda_available()) return state.SkipWithError("no CUDA GPU");
  const std::int64_t rows = state.range(0);
  FourBitInputs in(l, rows);
  time_on_gpu(state, [&] { in.weights.next().linear(in.x); });
  in.report(state, l, rows);
}

// gemm_4bit called directly, so that row counts past kGemm4MaxRows measure it too.
void BM_Gemm4(benchmark::State& state, const Layer& l) {
  if (!cuda_available()) return state.SkipWithError("no CUDA GPU");
  const std::int64_t rows = state.range(0);
  FourBitInputs in(l, rows);
  const Quant4Weight& cpu = in.cpu;
  time_on_gpu(state, [&] {
    cuda::gemm_4bit({.weight = models::quant::packed4_view(in.weights.next()),
                     .rows = rows,
                     .in_features = l.k,
                     .out_features = l.n,
                     .x = in.x.data_ptr(),
                     .y = in.out.data_ptr(),
                     .dtype = DType::kBF16,
                     .weight_dtype = cpu.state.dtype},
                    current_stream());
  });
  in.report(state, l, rows);
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
  report_tflops(state, l.flops(rows));
}

// Row counts: `few` for every layer, the 4-bit GEMM's as well where the layer asks for them.
std::vector<std::int64_t> rows_for(const Layer& l, std::initializer_list<std::int64_t> few, bool then_training) {
  std::vector<std::int64_t> rows(few);
  if (l.gemm4_rows)
    for (std::int64_t r : {16, 32, 64, 128, 256}) rows.push_back(r);
  if (then_training) rows.push_back(2048);
  return rows;
}

const bool kRegistered = [] {
  for (const Layer& l : kLayers) {
    const std::string name = l.name;
    auto configure = [](benchmark::internal::Benchmark* b, const std::vector<std::int64_t>& rows) {
      b->ArgName("rows")->UseManualTime()->Unit(benchmark::kMicrosecond);
      for (std::int64_t r : rows) b->Arg(r);
    };
    configure(benchmark::RegisterBenchmark((name + "/dequantize").c_str(), BM_Dequantize, l, false), {1, 2048});
    configure(benchmark::RegisterBenchmark((name + "/dequantize_gemm").c_str(), BM_Dequantize, l, true),
              rows_for(l, {1, 8}, true));
    configure(benchmark::RegisterBenchmark((name + "/gemv4").c_str(), BM_Gemv4, l), {1, 8});
    if (l.gemm4_rows)
      configure(benchmark::RegisterBenchmark((name + "/gemm4").c_str(), BM_Gemm4, l), rows_for(l, {}, false));
    configure(benchmark::RegisterBenchmark((name + "/bf16_gemm").c_str(), BM_Bf16Gemm, l), rows_for(l, {1, 8}, true));
  }
  return true;
}();

}  // namespace
}  // namespace zt::bench
