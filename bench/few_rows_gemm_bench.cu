// A decode step's linear layers at batch 1 to 32: cuda/gemm/few_rows's GEMM against cuBLASLt on
// the same bf16 weight, for the layers of Qwen2.5-0.5B, 1.5B and 7B (q/k/v joined, the output
// projection, gate/up joined, down). gate/up also as the kernel's SwiGLU epilogue against
// cuBLASLt then cuda/swiglu: what a decode step's MLP runs either way.
//   few_rows         the kernel, split K as it chooses
//   few_rows_splits  the kernel with K split over 1, 2, 4 or 8 blocks (a cluster), at 8 and 32
//                    rows: what the split it chooses is measured against
//   cublaslt         cuda::gemm (what linear_forward ran before)
//   few_rows_swiglu  gate/up only: the kernel with the SwiGLU epilogue
//   cublaslt_swiglu  gate/up only: cuda::gemm then cuda::swiglu_forward
//   few_rows_rope    q/k/v only: the kernel with the RoPE + KV-cache epilogue
//   few_rows_then_rope  q/k/v only: the kernel, then cuda::rope_rotate with its cache write
//                    (what a decode step's paged cache runs after the product)
// Bytes: the weight (x and y are a few KB); of_copy_ceiling is how near the weight streams at
// the copy rate. Weight sets rotate so that each product reads from DRAM; 16 products are
// replayed as one CUDA graph, as a decode step replays them, so the host is not what is timed.
//   build/bench/few_rows_gemm_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/gpu_bench.h"
#include "cuda/gemm/cublaslt_gemm.h"
#include "cuda/gemm/few_rows/few_rows_gemm.cuh"
#include "cuda/rope/rope.cuh"
#include "cuda/swiglu/swiglu.cuh"
#include "runtime/device.h"
#include "runtime/streams/cuda_graph.h"
#include "runtime/streams/current_stream.h"
#include "runtime/streams/stream.h"
#include "tensor/tensor.h"

namespace zt::bench {
namespace {

struct Layer {
  const char* name;
  std::int64_t k, n;  // in_features, out_features (gate/up: both halves)
  bool gate_up = false;
  std::int64_t q_heads = 0, kv_heads = 0, head_dim = 0;  // q/k/v joined: its heads
  double weight_bytes() const { return 2.0 * static_cast<double>(k) * static_cast<double>(n); }
};

const Layer kLayers[] = {
    {"Qwen0.5B_qkv", 896, 1152, false, 14, 2, 64},   {"Qwen0.5B_o", 896, 896},
    {"Qwen0.5B_gate_up", 896, 9728, true},           {"Qwen0.5B_down", 4864, 896},
    {"Qwen1.5B_qkv", 1536, 2048, false, 12, 2, 128}, {"Qwen1.5B_o", 1536, 1536},
    {"Qwen1.5B_gate_up", 1536, 17920, true},         {"Qwen1.5B_down", 8960, 1536},
    {"Qwen7B_qkv", 3584, 4608, false, 28, 4, 128},   {"Qwen7B_o", 3584, 3584},
    {"Qwen7B_gate_up", 3584, 37888, true},           {"Qwen7B_down", 18944, 3584},
};

int sets_for(double bytes) { return std::clamp(static_cast<int>(std::ceil(256.0 * (1 << 20) / bytes)), 1, 16); }

enum class Variant { kFewRows, kCublasLt, kFewRowsSwiglu, kCublasLtSwiglu, kFewRowsRope, kFewRowsThenRope };

// A decode step's RoPE inputs and a paged cache of 16-token blocks, for the q/k/v variants.
struct RopeInputs {
  Tensor positions, slots, inv_freq, key_pool, value_pool;
  cuda::RopeShape shape;
  cuda::RopeFrequencies frequencies{};

  RopeInputs(const Layer& l, std::int64_t rows) {
    if (l.head_dim == 0) return;
    std::vector<double> at, slot;
    for (std::int64_t r = 0; r < rows; ++r) {
      at.push_back(static_cast<double>(200 + 37 * r));
      slot.push_back(static_cast<double>(16 * r + 7));
    }
    positions = Tensor::from_values(at, {rows}, DType::kI64).to(Device::cuda());
    slots = Tensor::from_values(slot, {rows}, DType::kI64).to(Device::cuda());
    shape = {.tokens = rows, .head_dim = l.head_dim, .rotary_dim = l.head_dim};
    std::vector<double> inverse;
    for (std::int64_t i = 0; i < l.head_dim / 2; ++i) {
      frequencies.inv_freq[i] = static_cast<float>(std::pow(1e6, -2.0 * static_cast<double>(i) / l.head_dim));
      inverse.push_back(frequencies.inv_freq[i]);
    }
    inv_freq = Tensor::from_values(inverse, {l.head_dim / 2}, DType::kF32).to(Device::cuda());
    key_pool = Tensor::zeros({rows, 16, l.kv_heads, l.head_dim}, DType::kBF16, Device::cuda());
    value_pool = Tensor::zeros({rows, 16, l.kv_heads, l.head_dim}, DType::kBF16, Device::cuda());
  }

  cuda::FewRowsRope epilogue(const Layer& l) const {
    return {.head_dim = l.head_dim,
            .q_heads = l.q_heads,
            .kv_heads = l.kv_heads,
            .positions = positions.data<std::int64_t>(),
            .inv_freq = inv_freq.data<float>(),
            .slots = slots.data<std::int64_t>(),
            .key_pool = key_pool.data_ptr(),
            .value_pool = value_pool.data_ptr(),
            .num_slots = key_pool.size(0) * 16};
  }

  // The paged cache's launch after the product: q and k rotated in place in it, k and v stored.
  void rotate(const Layer& l, Tensor& product) const {
    char* base = static_cast<char*>(product.data_ptr());
    const std::int64_t q_bytes = l.q_heads * l.head_dim * 2, kv_bytes = l.kv_heads * l.head_dim * 2;
    const cuda::RopeOperand q{base, base, l.q_heads, l.n, l.n}, k{base + q_bytes, base + q_bytes, l.kv_heads, l.n, l.n};
    const cuda::RopeCacheWrite cache{.v = base + q_bytes + kv_bytes,
                                     .v_token_stride = l.n,
                                     .slots = slots.data<std::int64_t>(),
                                     .key_pool = key_pool.data_ptr(),
                                     .value_pool = value_pool.data_ptr(),
                                     .num_slots = key_pool.size(0) * 16};
    cuda::rope_rotate(q, k, DType::kBF16, positions.data_ptr(), DType::kI64, shape, frequencies, false,
                      current_stream(), &cache);
  }
};

// One product of `l` on `rows` rows into the variant's outputs.
void multiply(const Layer& l, Variant variant, int k_splits, const Tensor& x, const Tensor& w, Tensor& product,
              Tensor& activated, const RopeInputs& rope) {
  const std::int64_t rows = x.size(0);
  const bool swiglu = variant == Variant::kFewRowsSwiglu || variant == Variant::kCublasLtSwiglu;
  if (variant != Variant::kCublasLt && variant != Variant::kCublasLtSwiglu) {
    cuda::FewRowsGemmArgs args{.rows = rows,
                               .in_features = l.k,
                               .out_features = l.n,
                               .x = x.data_ptr(),
                               .x_row_stride = l.k,
                               .weight = w.data_ptr(),
                               .y = swiglu ? activated.data_ptr() : product.data_ptr(),
                               .dtype = DType::kBF16,
                               .output = swiglu ? cuda::FewRowsOutput::kSwiglu : cuda::FewRowsOutput::kLinear,
                               .k_splits = k_splits};
    if (variant == Variant::kFewRowsRope) {
      args.output = cuda::FewRowsOutput::kRopeQkv;
      args.rope = rope.epilogue(l);
    }
    cuda::few_rows_gemm(args, current_stream());
    if (variant == Variant::kFewRowsThenRope) rope.rotate(l, product);
    return;
  }
  cuda::gemm(DType::kBF16, {x.data_ptr(), rows, l.k, l.k, 0, false}, {w.data_ptr(), l.n, l.k, l.k, 0, true},
             {product.data_ptr(), rows, l.n, l.n, 0}, 1, nullptr, current_stream());
  if (swiglu)
    cuda::swiglu_forward(product.data_ptr(), static_cast<std::uint16_t*>(product.data_ptr()) + l.n / 2,
                         activated.data_ptr(), DType::kBF16, {.rows = rows, .ffn = l.n / 2, .in_row_stride = l.n},
                         current_stream());
}

// kLaunches products, one per rotating weight set, captured as one CUDA graph and timed by
// replays: a decode step replays its products so, and a launch from the host would cost more
// than the smaller products themselves. Time and bytes are per product.
void BM_Linear(benchmark::State& state, const Layer& l, Variant variant) {
  if (!cuda_available()) return state.SkipWithError("no CUDA GPU");
  constexpr int kLaunches = 16;
  const std::int64_t rows = state.range(0);
  const int k_splits = state.range(1) > 0 ? static_cast<int>(state.range(1)) : 0;  // 0: the kernel's choice
  RotatingSets<Tensor> weights(sets_for(l.weight_bytes()), [&](int i) {
    return Tensor::normal({l.n, l.k}, 10 + i, 0, 0.0, 0.02, DType::kBF16, Device::cuda());
  });
  const Tensor x = Tensor::normal({rows, l.k}, 1, 0, 0.0, 1.0, DType::kBF16, Device::cuda());
  Tensor product = Tensor::empty({rows, l.n}, DType::kBF16, Device::cuda());
  Tensor activated = Tensor::empty({rows, l.n / 2}, DType::kBF16, Device::cuda());
  const RopeInputs rope(l, rows);
  const Stream stream = Stream::create();
  const CudaGraph graph = [&] {
    StreamScope on_stream(stream.get());
    multiply(l, variant, k_splits, x, weights.next(), product, activated, rope);  // the allocator's blocks, warmed
    return CudaGraph::capture(stream.get(), [&] {
      for (int i = 0; i < kLaunches; ++i) multiply(l, variant, k_splits, x, weights.next(), product, activated, rope);
    });
  }();
  Event start(true), stop(true);
  graph.replay(stream.get());
  for (auto _ : state) {
    start.record(stream.get());
    graph.replay(stream.get());
    stop.record(stream.get());
    stop.synchronize();
    state.SetIterationTime(start.elapsed_ms(stop) / 1e3 / kLaunches);
  }
  report_bandwidth(state, l.weight_bytes());
}

const bool kRegistered = [] {
  enum class Only { kAny, kGateUp, kQkv };
  const struct {
    Variant variant;
    const char* name;
    Only only;
  } kVariants[] = {{Variant::kFewRows, "few_rows", Only::kAny},
                   {Variant::kCublasLt, "cublaslt", Only::kAny},
                   {Variant::kFewRowsSwiglu, "few_rows_swiglu", Only::kGateUp},
                   {Variant::kCublasLtSwiglu, "cublaslt_swiglu", Only::kGateUp},
                   {Variant::kFewRowsRope, "few_rows_rope", Only::kQkv},
                   {Variant::kFewRowsThenRope, "few_rows_then_rope", Only::kQkv}};
  for (const Layer& l : kLayers)
    for (const auto& v : kVariants) {
      if ((v.only == Only::kGateUp && !l.gate_up) || (v.only == Only::kQkv && l.head_dim == 0)) continue;
      auto* b = benchmark::RegisterBenchmark((std::string(l.name) + "/" + v.name).c_str(), BM_Linear, l, v.variant);
      b->ArgNames({"rows", "splits"})->UseManualTime()->Unit(benchmark::kMicrosecond);
      for (std::int64_t rows : {1, 4, 8, 16, 32}) b->Args({rows, 0});
    }
  for (const Layer& l : kLayers) {
    auto* b = benchmark::RegisterBenchmark((std::string(l.name) + "/few_rows_splits").c_str(), BM_Linear, l,
                                           Variant::kFewRows);
    b->ArgNames({"rows", "splits"})->UseManualTime()->Unit(benchmark::kMicrosecond);
    for (std::int64_t rows : {8, 32})
      for (std::int64_t splits : {1, 2, 4, 8}) b->Args({rows, splits});
  }
  return true;
}();

}  // namespace
}  // namespace zt::bench
