// The few-row GEMM's residual add + RMSNorm prologue (FewRowsNorm, few_rows_gemm.cuh), included
// by few_rows_gemm.cu alone.
//
// Two halves. Before the first step, row_statistics gives each of the block's rows its 1/rms
// over the whole of x + residual, summed exactly as cuda/norm's forward kernel sums a row (its
// plan's row group of threads, each adding its 16-byte vectors in order, then the group's sum),
// so the statistics and everything after have the norm kernel's bits; one block per row tile
// also stores the sum. Then, as each step's x and residual tiles land in shared memory,
// normalize_chunk turns the thread's own 16-byte chunk of x into the norm's output, in place,
// before the barrier that hands the tile to the warps: no extra barrier and no extra pass.
#pragma once

#include <cstdint>

#include "cuda/common/vector_io.cuh"
#include "cuda/gemm/few_rows/few_rows_gemm.cuh"
#include "cuda/norm/rmsnorm_row.cuh"

namespace zt::cuda::few_rows_norm {

// What the prologue needs besides FewRowsNorm: cuda/norm's plan for a row of K (its row group
// and vectors per thread, at 16-byte vectors), fixed on the host.
struct RowPlan {
  int group_threads = 32;
  int vectors_per_thread = 1;
};

// Shared floats the prologue uses after the pipeline's stages: the group sums' scratch, then
// the 1/rms of each of the block's rows.
constexpr int kScratchFloats = 32;
template <int kRows>
constexpr int kSharedFloats = kScratchFloats + kRows;

// x + residual of one 16-byte vector, rounded as cuda/norm's fused add rounds it.
template <typename T, int W>
__device__ __forceinline__ void summed_vector(const T* x, const T* residual, float (&v)[W]) {
  float r[W];
  load_vector<T, W>(x, v);
  load_vector<T, W>(residual, r);
#pragma unroll
  for (int i = 0; i < W; ++i) v[i] = round_through<T>(__fadd_rn(v[i], r[i]));
}

// The most vectors a thread of a row group holds: cuda/norm's plans for rows of up to kThreads
// groups have 1 or 4.
constexpr int kMaxVectorsPerThread = 4;

// 1/rms of rows m0 .. m0 + kRows - 1 (those below `rows`) into row_rstd; when store_sum, the
// sums into norm.sum too. Every thread of the block calls it (the group sums synchronise).
// Each thread first adds its share of every row's squares, with no barrier between rows so the
// rows' loads overlap, then the groups sum them row by row: the same partial sums in the same
// order as the norm kernel's, so the same bits. With 96-thread groups the block's last 32
// threads are no group's and take no row.
template <typename T, int kRows>
__device__ void row_statistics(const FewRowsGemmArgs& a, const RowPlan& plan, std::int64_t m0, bool store_sum,
                               float* scratch, float* row_rstd) {
  constexpr int W = kVectorWidth<T>;
  const rmsnorm_detail::RowGroup g = rmsnorm_detail::row_group(plan.group_threads);
  const std::int64_t vectors = a.in_features / W, end = min(m0 + kRows, a.rows);
  const bool in_group = g.index < g.count;
  // A part group's sum reads scratch slots no warp writes; they hold zeros.
  if (threadIdx.x >= blockDim.x / 32 && threadIdx.x < kScratchFloats) scratch[threadIdx.x] = 0.0f;
  float squares[kRows];
#pragma unroll
  for (int it = 0; it < kRows; ++it) {
    squares[it] = 0.0f;
    const std::int64_t row = m0 + it * g.count + g.index;
    if (!in_group || row >= end) continue;
#pragma unroll
    for (int k = 0; k < kMaxVectorsPerThread; ++k) {
      const std::int64_t j = g.lane + static_cast<std::int64_t>(k) * g.threads;
      if (k < plan.vectors_per_thread && j < vectors) {
        float v[W];
        const std::int64_t at = row * a.x_row_stride + j * W;
        summed_vector<T, W>(static_cast<const T*>(a.x) + at, static_cast<const T*>(a.norm.residual) + at, v);
#pragma unroll
        for (int i = 0; i < W; ++i) squares[it] += v[i] * v[i];
      }
    }
  }
#pragma unroll
  for (int it = 0; it < kRows; ++it) {
    if (m0 + it * g.count >= end) break;  // the same for every thread of the block
    const float sum = rmsnorm_detail::group_sum(squares[it], g.threads, scratch);
    const std::int64_t row = m0 + it * g.count + g.index;
    if (in_group && row < end && g.lane == 0)
      row_rstd[row - m0] = rmsnorm_detail::inverse_rms(sum, a.in_features, a.norm.eps);
  }
  if (store_sum) {
    // The sums again (from L1 or L2), spread over the block's threads.
    for (std::int64_t i = threadIdx.x; i < (end - m0) * vectors; i += blockDim.x) {
      const std::int64_t row = m0 + i / vectors, j = i % vectors;
      float v[W];
      const std::int64_t at = row * a.x_row_stride + j * W;
      summed_vector<T, W>(static_cast<const T*>(a.x) + at, static_cast<const T*>(a.norm.residual) + at, v);
      store_vector<T, W>(static_cast<T*>(a.norm.sum) + row * a.in_features + j * W, v);
    }
  }
  __syncthreads();
}

// The thread's chunk of a step's x tile (8 values of row `r` from column k) and of its residual
// tile, both landed, become the norm's output w · (sum · rstd) as cuda/norm stores it.
template <typename T>
__device__ __forceinline__ void normalize_chunk(const FewRowsGemmArgs& a, T* x_chunk, const T* residual_chunk,
                                                std::int64_t k, float rstd) {
  constexpr int W = kVectorWidth<T>;
  float v[W], w[W];
  summed_vector<T, W>(x_chunk, residual_chunk, v);
  load_vector_ro<T, W>(static_cast<const T*>(a.norm.weight) + k, w);
#pragma unroll
  for (int i = 0; i < W; ++i)
    v[i] = __fmul_rn(w[i], rmsnorm_detail::normalized<T>(v[i], rstd, a.norm.round_normalized));
  store_vector<T, W>(x_chunk, v);
}

}  // namespace zt::cuda::few_rows_norm
