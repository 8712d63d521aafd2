// The small-M linear kernel (cuda/gemv/) against cuBLASLt (cuda/gemm/) on the decode-step
// linear layers of Qwen2.5-1.5B and Qwen2.5-7B, bfloat16, at 1, 8 and 32 rows (tokens):
// qkv (after the input RMSNorm, with bias), o (into the residual), gate_up (after the
// post-attention RMSNorm), down (after SwiGLU, into the residual) and the LM head (after the
// final norm). Three timings per layer and row count, all on the cuda/ entry points with
// preallocated outputs and no host-side checks:
//   gemv_fused  the kernel with the layer's own prologue and epilogue (what replaces the
//               GEMM and the norm/SwiGLU/bias/residual kernels around it),
//   gemv_plain  the kernel on the bare product,
//   cublaslt    the bare product through cuda::gemm (qkv's bias as its epilogue).
// Bytes: the weight read once (n · k · 2), against the copy ceiling; inputs, outputs and
// partial sums are not counted. Weight sets rotate so that every iteration reads from DRAM.
//   build/bench/gemv_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "bench/gpu_bench.h"
#include "cuda/gemm/cublaslt_gemm.h"
#include "cuda/gemv/gemv.cuh"
#include "runtime/device.h"
#include "tensor/tensor.h"

namespace zt::bench {
namespace {

struct Layer {
  const char* name;
  std::int64_t k, n;
  cuda::GemvPrologue prologue;
  bool bias, residual;
  double weight_bytes() const { return static_cast<double>(k) * static_cast<double>(n) * 2; }
};

constexpr cuda::GemvPrologue kNone = cuda::GemvPrologue::kNone, kNorm = cuda::GemvPrologue::kRmsNorm,
                             kSwiglu = cuda::GemvPrologue::kSwiglu;

const Layer kLayers[] = {
    {"Qwen1.5B_qkv", 1536, 2048, kNorm, true, false},
    {"Qwen1.5B_o", 1536, 1536, kNone, false, true},
    {"Qwen1.5B_gate_up", 1536, 17920, kNorm, false, false},
    {"Qwen1.5B_down", 8960, 1536, kSwiglu, false, true},
    {"Qwen1.5B_lm_head", 1536, 151936, kNorm, false, false},
    {"Qwen7B_qkv", 3584, 4608, kNorm, true, false},
    {"Qwen7B_o", 3584, 3584, kNone, false, true},
    {"Qwen7B_gate_up", 3584, 37888, kNorm, false, false},
    {"Qwen7B_down", 18944, 3584, kSwiglu, false, true},
    {"Qwen7B_lm_head", 3584, 151936, kNorm, false, false},
};

Tensor random(const Shape& shape, std::uint64_t seed, double mean = 0.0) {
  return Tensor::normal(shape, seed, 0, mean, 1.0, DType::kBF16, Device::cuda());
}

// Enough weight copies that one pass over them is at least 256 MiB, so iterations read DRAM.
int sets_for(double bytes) { return std::clamp(static_cast<int>(std::ceil(256.0 * (1 << 20) / bytes)), 1, 64); }

// Everything but the weight, for `rows` rows of one layer.
struct Activations {
  Activations(const Layer& l, std::int64_t rows)
      : x(random({rows, l.prologue == kSwiglu ? 2 * l.k : l.k}, 1)),
        norm_weight(random({l.k}, 2, 1.0)),
        bias(random({l.n}, 3)),
        residual(random({rows, l.n}, 4)),
        out(Tensor::empty({rows, l.n}, DType::kBF16, Device::cuda())) {}
  Tensor x, norm_weight, bias, residual, out;
};

void BM_Gemv(benchmark::State& state, const Layer& l, bool fused) {
  if (!cuda_available()) return state.SkipWithError("no CUDA GPU");
  const std::int64_t rows = state.range(0);
  RotatingSets<Tensor> weights(sets_for(l.weight_bytes()), [&](int i) { return random({l.n, l.k}, 10 + i); });
  Activations in(l, rows);
  const cuda::GemvShape shape{rows, l.k, l.n};
  const std::size_t bytes = cuda::gemv_workspace_bytes(DType::kBF16, shape);
  Tensor workspace =
      Tensor::zeros({static_cast<std::int64_t>(std::max<std::size_t>(bytes, 1))}, DType::kU8, Device::cuda());
  cuda::GemvArgs a;
  a.x = in.x.data_ptr();
  a.x_row_stride = in.x.size(1);
  a.weight_row_stride = l.k;
  a.out = in.out.data_ptr();
  const cuda::GemvPrologue prologue = fused ? l.prologue : kNone;
  if (prologue == kSwiglu) a.up = static_cast<const char*>(in.x.data_ptr()) + l.k * 2;
  if (prologue == kNorm) {
    a.norm_weight = in.norm_weight.data_ptr();
    a.eps = 1e-6f;
  }
  if (fused && l.bias) a.bias = in.bias.data_ptr();
  if (fused && l.residual) {
    a.residual = in.residual.data_ptr();
    a.residual_row_stride = l.n;
  }
  time_on_gpu(state, [&] {
    a.weight = weights.next().data_ptr();
    cuda::gemv(a, prologue, DType::kBF16, shape, workspace.data_ptr(), nullptr);
  });
  report_bandwidth(state, l.weight_bytes());
  state.counters["splits"] = cuda::gemv_splits(DType::kBF16, shape);
}

void BM_Cublaslt(benchmark::State& state, const Layer& l) {
  if (!cuda_available()) return state.SkipWithError("no CUDA GPU");
  const std::int64_t rows = state.range(0);
  RotatingSets<Tensor> weights(sets_for(l.weight_bytes()), [&](int i) { return random({l.n, l.k}, 10 + i); });
  const Tensor x = random({rows, l.k}, 1), bias = random({l.n}, 3);
  Tensor out = Tensor::empty({rows, l.n}, DType::kBF16, Device::cuda());
  const cuda::GemmOperand lhs{x.data_ptr(), rows, l.k, l.k, 0, false};
  const cuda::GemmResult result{out.data_ptr(), rows, l.n, l.n, 0};
  time_on_gpu(state, [&] {
    const cuda::GemmOperand rhs{weights.next().data_ptr(), l.n, l.k, l.k, 0, true};
    cuda::gemm(DType::kBF16, lhs, rhs, result, 1, l.bias ? bias.data_ptr() : nullptr, nullptr);
  });
  report_bandwidth(state, l.weight_bytes());
}

const bool kRegistered = [] {
  for (const Layer& l : kLayers) {
    const std::string name = l.name;
    for (benchmark::internal::Benchmark* b :
         {benchmark::RegisterBenchmark((name + "/gemv_fused").c_str(), BM_Gemv, l, true),
          benchmark::RegisterBenchmark((name + "/gemv_plain").c_str(), BM_Gemv, l, false),
          benchmark::RegisterBenchmark((name + "/cublaslt").c_str(), BM_Cublaslt, l)})
      b->ArgName("rows")->Arg(1)->Arg(8)->Arg(32)->UseManualTime()->Unit(benchmark::kMicrosecond);
  }
  return true;
}();

}  // namespace
}  // namespace zt::bench
