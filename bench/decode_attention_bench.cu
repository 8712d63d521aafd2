// Decode attention over a paged KV cache at Qwen2.5-7B's shapes (28 query heads, 4 kv heads,
// head_dim 128, bfloat16, pages of 16 tokens dealt in a shuffled order), batch 1 and 32, every
// sequence at 256, 2048 or 8192 cached tokens; timed on the kernels themselves (the cuda/ entry
// point on preallocated output and workspace, no host-side checks), with the split count the
// op would choose and, at batch 1, with one split to show what splitting buys. Bytes: the K
// and V each sequence reads once (batch · context · kv_heads · head_dim · 2 · 2), against the
// copy ceiling; the queries, partials and output are a few percent on top and not counted.
// Where one set of pools would fit in L2, iterations rotate through several. Also argmax_rows
// over a 152064-token vocabulary (bytes: the logits read once).
//   build/bench/decode_attention_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "bench/gpu_bench.h"
#include "cuda/attention/decode/decode_attention.cuh"
#include "cuda/reduce/reduce.cuh"
#include "runtime/device.h"
#include "tensor/tensor.h"

namespace zt::bench {
namespace {

constexpr int kHeads = 28, kKvHeads = 4, kHeadDim = 128, kBlockSize = 16;

struct Problem {
  int batch, context;
  double kv_bytes() const { return 2.0 * batch * static_cast<double>(context) * kKvHeads * kHeadDim * 2; }
};

// One independent set of inputs: pools holding exactly the batch's pages, a shuffled block table.
struct DecodeSet {
  Tensor q, key_pool, value_pool, block_table, seq_lens;

  DecodeSet(const Problem& p, std::uint64_t seed) {
    const int pages_per_seq = p.context / kBlockSize;
    const std::int64_t pages = static_cast<std::int64_t>(p.batch) * pages_per_seq;
    const Shape pool{pages, kBlockSize, kKvHeads, kHeadDim};
    q = Tensor::normal({p.batch, kHeads, kHeadDim}, seed, 0, 0.0, 1.0, DType::kBF16, Device::cuda());
    key_pool = Tensor::normal(pool, seed + 1, 0, 0.0, 1.0, DType::kBF16, Device::cuda());
    value_pool = Tensor::normal(pool, seed + 2, 0, 0.0, 1.0, DType::kBF16, Device::cuda());
    std::vector<double> order(static_cast<std::size_t>(pages));
    std::iota(order.begin(), order.end(), 0.0);
    std::mt19937_64 rng(seed);
    std::shuffle(order.begin(), order.end(), rng);
    block_table = Tensor::from_values(order, {p.batch, pages_per_seq}, DType::kI32).to(Device::cuda());
    seq_lens = Tensor::full({p.batch}, p.context, DType::kI32, Device::cuda());
  }
  cuda::DecodeAttentionInputs inputs() const {
    return {q.data_ptr(), key_pool.data_ptr(), value_pool.data_ptr(), block_table.data<std::int32_t>(),
            seq_lens.data<std::int32_t>()};
  }
};

// Enough sets that one pass over them is at least 256 MiB, so iterations read from DRAM.
int sets_for(double bytes) { return std::clamp(static_cast<int>(std::ceil(256.0 * (1 << 20) / bytes)), 1, 256); }

void BM_DecodeAttention(benchmark::State& state, Problem p, bool one_split) {
  if (!cuda_available()) return state.SkipWithError("no CUDA GPU");
  cuda::DecodeAttentionDims dims;
  dims.batch = p.batch;
  dims.num_heads = kHeads;
  dims.num_kv_heads = kKvHeads;
  dims.head_dim = kHeadDim;
  dims.num_blocks = static_cast<std::int64_t>(p.batch) * (p.context / kBlockSize);
  dims.block_size = kBlockSize;
  dims.max_blocks_per_seq = p.context / kBlockSize;
  dims.softmax_scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  const int splits = one_split ? 1 : cuda::decode_attention_num_splits(dims);
  RotatingSets<DecodeSet> sets(sets_for(p.kv_bytes()), [&](int i) { return DecodeSet(p, 100 + 10 * i); });
  Tensor out = Tensor::empty({p.batch, kHeads, kHeadDim}, DType::kBF16, Device::cuda());
  const auto workspace_bytes = static_cast<std::int64_t>(cuda::decode_attention_workspace_bytes(dims, splits));
  Tensor workspace = Tensor::empty({std::max<std::int64_t>(workspace_bytes, 1)}, DType::kU8, Device::cuda());
  time_on_gpu(state, [&] {
    cuda::decode_attention(dims, sets.next().inputs(), DType::kBF16, out.data_ptr(), splits, workspace.data_ptr(),
                           nullptr);
  });
  report_bandwidth(state, p.kv_bytes());
  state.counters["splits"] = splits;
}

void BM_ArgmaxRows(benchmark::State& state) {
  if (!cuda_available()) return state.SkipWithError("no CUDA GPU");
  const std::int64_t rows = state.range(0), vocab = 152064;
  const double bytes = static_cast<double>(rows) * vocab * 2;
  RotatingSets<Tensor> sets(sets_for(bytes), [&](int i) {
    return Tensor::normal({rows, vocab}, 7 + i, 0, 0.0, 1.0, DType::kBF16, Device::cuda());
  });
  Tensor out = Tensor::empty({rows}, DType::kI64, Device::cuda());
  time_on_gpu(state, [&] {
    cuda::argmax_rows(sets.next().data_ptr(), out.data<std::int64_t>(), DType::kBF16, rows, vocab, vocab, nullptr);
  });
  report_bandwidth(state, bytes);
}

#define ZT_DECODE_SHAPE(name, batch, context, one_split)                          \
  BENCHMARK_CAPTURE(BM_DecodeAttention, name, Problem{batch, context}, one_split) \
      ->UseManualTime()                                                           \
      ->Unit(benchmark::kMicrosecond)

ZT_DECODE_SHAPE(B1_ctx256, 1, 256, false);
ZT_DECODE_SHAPE(B1_ctx2048, 1, 2048, false);
ZT_DECODE_SHAPE(B1_ctx8192, 1, 8192, false);
ZT_DECODE_SHAPE(B32_ctx256, 32, 256, false);
ZT_DECODE_SHAPE(B32_ctx2048, 32, 2048, false);
ZT_DECODE_SHAPE(B32_ctx8192, 32, 8192, false);
ZT_DECODE_SHAPE(B1_ctx2048_one_split, 1, 2048, true);
ZT_DECODE_SHAPE(B1_ctx8192_one_split, 1, 8192, true);
BENCHMARK(BM_ArgmaxRows)->Arg(1)->Arg(32)->Arg(64)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace zt::bench
