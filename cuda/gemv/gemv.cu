// Small-M linear: how the work is cut.
//
// Columns. A warp owns 16 rows of W (16 output columns), a block of 8 warps a strip of 128.
// Each thread of a quad (lane = 4 * group + quad) takes 8 consecutive k of W rows group and
// group + 8: one 16-byte load per row for 16-bit weights (two for float32), through the
// evict-first cache path since every weight is read once. Four such steps (a quad covers 32 k
// per step, so 128 k per iteration) are in flight at once, the next iteration is loaded while
// the current one computes, and the first is issued before the prologue so the weights
// already stream while the block prepares its input rows.
//
// Products. bfloat16/float16 run on tensor cores as out[rows, 16]ᵀ = W[16, k] · x[rows, k]ᵀ:
// the 16 weight rows are mma.m16n8k16's M, the input rows its N (8 per tile, 1 to 4 tiles),
// so rows 2 to 8 beside the first cost tensor-core time, which is idle here, not bandwidth.
// A chunk of 8 k feeds two MMAs without shuffling: the sum over k does not care which k a
// fragment register calls which, so elements 4j..4j+3 of the chunk play the MMA's k columns
// {2q, 2q+1, 2q+8, 2q+9} in MMA j, for W (A operand) and x (B operand) alike. float32 runs
// the same chunks through FMAs (no TF32: results stay float32-accurate) and adds the quad's
// four partial sums with two shuffles; it is correct, not fast.
//
// Inputs. The block's input rows, after the prologue, sit in shared memory in the dtype
// (the values are exactly representable: the prologues round to the dtype as torch stores
// them). 32 rows of Qwen2.5-7B's 18944-wide down projection would be 1.2 MB, far beyond a
// block, so k is split across blocks (grid.y) until rows × split fits 64 KiB (e.g. 896 k at
// 32 bf16 rows, 3968 at 8, the whole row at 1). Tiling the rows instead would read every
// weight once per tile; split-K reads each once and pays fp32 partial sums written and read
// back, 8 · rows · n bytes per split: under 1 % of the weight bytes at 8 rows, ~14 % at 32
// rows of 16-bit (896-k splits).
// Splits also fill the GPU when there are few strips (a 512-wide k/v projection is 4
// strips): k is cut until there are about 264 blocks (two per SM of an H100/H200), in steps
// of 128 k and no shorter than 256. The plan depends on the shape alone, never on the GPU.
// Shared rows are padded by 64 bytes, so the 8 lanes of a quarter-warp (two rows, four
// 16-byte pieces each) read 32 distinct banks.
//
// RMSNorm needs each row's sum of squares over all k before any element can be used: every
// block computes it for its rows (a warp per row, the whole row read, mostly from L2: rows · k
// elements per block, small beside the block's weights at a few rows).
//
// Split-K in one launch: each block writes its fp32 partial tile, then counts itself in on
// its strip's counter; the last block to arrive adds the partials in split order (so the bits
// do not depend on which block was last), applies the epilogue and puts the counter back to
// zero for the next launch. With one split the epilogue runs straight from the block's tile.
//
// Tails: weight rows past n are read clamped (never stored), k past the end is zero in both
// operands (masked loads, zero-filled shared rows). Pointers or strides that are not whole
// 16-byte vectors take the same kernel with element-wise loads.
#include "cuda/gemv/gemv.cuh"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>

#include "cuda/common/cuda_common.cuh"
#include "cuda/common/mma.cuh"
#include "cuda/common/scratch_buffer.h"
#include "cuda/common/shuffle_reduce.cuh"
#include "cuda/common/vector_io.cuh"
#include "cuda/elementwise/elementwise_dispatch.cuh"
#include "cuda/norm/rmsnorm_row.cuh"
#include "runtime/check.h"
#include "runtime/error.h"

namespace zt::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
constexpr int kWarpColumns = 16;  // weight rows per warp: the MMA's M
constexpr int kStripColumns = kWarps * kWarpColumns;
constexpr int kChunk = 8;                 // consecutive k per thread per weight row per step
constexpr int kStepK = 4 * kChunk;        // a quad's k per step
constexpr int kUnroll = 4;                // steps per iteration
constexpr int kIterK = kUnroll * kStepK;  // 128
constexpr int kRowPadBytes = 64;
constexpr int kTileStride = kStripColumns + 4;  // floats per row of the result tile
constexpr std::int64_t kSharedBudget = 64 * 1024;
constexpr std::int64_t kTargetBlocks = 264;
constexpr std::int64_t kMinSplitK = 256;
constexpr int kMaxSplits = 65535;  // grid.y
// The workspace's counters take a fixed prefix, one per strip up to this many (n up to 1 Mi
// columns), whatever the shape: partials of one shape never land on another's counters, so
// one workspace serves every layer of a model.
constexpr std::int64_t kMaxStrips = 8192;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

struct Plan {
  std::int64_t strips = 0;
  std::int64_t k_per_split = 0;  // a multiple of kIterK
  int splits = 1;
  int x_row_elements = 0;  // shared row stride
  std::size_t shared_bytes = 0;
  std::size_t counter_bytes = 0;  // the workspace's counter prefix
  std::size_t workspace_bytes = 0;
};

// k per split: enough splits for about kTargetBlocks blocks, whole iterations, at least
// kMinSplitK, and no longer than the rows fit in kSharedBudget.
Plan make_plan(std::int64_t element, const GemvShape& s) {
  Plan p;
  p.strips = ceil_div(s.n, kStripColumns);
  const std::int64_t rows = std::max<std::int64_t>(s.rows, 1);
  const std::int64_t fits = (kSharedBudget / rows - kRowPadBytes) / element / kIterK * kIterK;
  const std::int64_t wanted_splits = ceil_div(kTargetBlocks, std::max<std::int64_t>(p.strips, 1));
  std::int64_t split = ceil_div(std::max<std::int64_t>(ceil_div(s.k, kIterK), 1), wanted_splits) * kIterK;
  split = std::min(std::max(split, kMinSplitK), fits);
  p.k_per_split = split;
  p.splits = static_cast<int>(std::max<std::int64_t>(ceil_div(s.k, split), 1));
  p.x_row_elements = static_cast<int>(split + kRowPadBytes / element);
  const std::int64_t tile = ceil_div(rows, 8) * 8 * kTileStride * 4;
  p.shared_bytes = static_cast<std::size_t>(std::max(rows * p.x_row_elements * element, tile));
  if (p.splits > 1) {
    p.counter_bytes = static_cast<std::size_t>(kMaxStrips * 4);
    p.workspace_bytes = p.counter_bytes + static_cast<std::size_t>(p.splits) * s.rows * s.n * 4;
  }
  return p;
}

struct Params {
  GemvArgs a;
  GemvPrologue prologue = GemvPrologue::kNone;
  int rows = 0;
  std::int64_t k = 0, n = 0;
  std::int64_t k_per_split = 0;
  int x_row_elements = 0;
  int splits = 1;
  unsigned* counters = nullptr;  // [strips]
  float* partial = nullptr;      // [splits, rows, n]
};

// ---- weights ----

// kChunk consecutive elements of one weight row, as raw 16-byte vectors.
template <typename T>
struct Chunk {
  uint4 v[sizeof(T) * kChunk / 16];
};

// A thread's weight chunks for one iteration: kUnroll steps, rows group and group + 8.
template <typename T>
struct Chunks {
  Chunk<T> c[kUnroll][2];
};

template <typename T, bool kVector>
__device__ __forceinline__ Chunk<T> load_chunk(const T* row, std::int64_t k, std::int64_t k_total) {
  Chunk<T> chunk;
  if constexpr (kVector) {
    // k_total is a whole number of vectors here, so a vector is all in or all out.
    constexpr int kWidth = 16 / sizeof(T);
#pragma unroll
    for (int i = 0; i < static_cast<int>(sizeof(chunk.v) / 16); ++i)
      chunk.v[i] = k + i * kWidth < k_total ? __ldcs(reinterpret_cast<const uint4*>(row + k + i * kWidth))
                                            : make_uint4(0u, 0u, 0u, 0u);
  } else {
    Packed<T, kChunk> elements;
#pragma unroll
    for (int i = 0; i < kChunk; ++i) elements.v[i] = k + i < k_total ? row[k + i] : static_cast<T>(0.0f);
    static_assert(sizeof(elements) == sizeof(chunk));
    memcpy(&chunk, &elements, sizeof(chunk));
  }
  return chunk;
}

template <typename T>
struct WarpRows {
  const T* first;   // weight row n0 + group
  const T* second;  // weight row n0 + group + 8
};

// Rows past n are clamped onto row n - 1: read, computed, never stored.
template <typename T>
__device__ __forceinline__ WarpRows<T> warp_rows(const Params& p, std::int64_t n0, int lane) {
  const T* w = static_cast<const T*>(p.a.weight);
  const std::int64_t first = min(n0 + lane / 4, p.n - 1), second = min(n0 + lane / 4 + 8, p.n - 1);
  return {w + first * p.a.weight_row_stride, w + second * p.a.weight_row_stride};
}

template <typename T, bool kVector>
__device__ __forceinline__ void load_iteration(Chunks<T>& w, const WarpRows<T>& rows, std::int64_t k,
                                               std::int64_t k_total, int lane) {
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const std::int64_t at = k + u * kStepK + (lane % 4) * kChunk;
    w.c[u][0] = load_chunk<T, kVector>(rows.first, at, k_total);
    w.c[u][1] = load_chunk<T, kVector>(rows.second, at, k_total);
  }
}

// ---- products over one iteration ----

// 16-bit: per step, the chunk's halves are two MMAs' A fragments (see the file comment), the
// matching 16 bytes of each input row tile their B fragments; rows past `rows` read as zero.
template <typename T, int kMTiles>
struct MmaAccumulator {
  mma::FragC c[kMTiles];

  __device__ __forceinline__ void zero() { mma::zero(c); }

  __device__ __forceinline__ void add(const Chunks<T>& w, const T* xs, int x_row, int local_k, int rows, int lane) {
    const int group = lane / 4;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int at = local_k + u * kStepK + (lane % 4) * kChunk;
      const uint4 a = w.c[u][0].v[0], b = w.c[u][1].v[0];
      const mma::FragA low{{a.x, b.x, a.y, b.y}}, high{{a.z, b.z, a.w, b.w}};
#pragma unroll
      for (int t = 0; t < kMTiles; ++t) {
        const int m = 8 * t + group;
        const uint4 x = m < rows ? *reinterpret_cast<const uint4*>(xs + m * x_row + at) : make_uint4(0u, 0u, 0u, 0u);
        mma::mma_16816<T>(c[t], low, x.x, x.y);
        mma::mma_16816<T>(c[t], high, x.z, x.w);
      }
    }
  }

  __device__ __forceinline__ void finish() {}

  // c[t].x[0..1]: column n0 + group, rows 8t + 2q, +1; x[2..3]: column n0 + group + 8.
  __device__ __forceinline__ void store(float* tile, int column0, int lane) const {
    const int group = lane / 4, quad = lane % 4;
#pragma unroll
    for (int t = 0; t < kMTiles; ++t)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float* row = tile + (8 * t + 2 * quad + e) * kTileStride + column0 + group;
        row[0] = c[t].x[e];
        row[8] = c[t].x[2 + e];
      }
  }
};

// float32: each thread dots its 8 k of both weight rows with every input row's same 8 k.
template <int kMTiles>
struct FmaAccumulator {
  static constexpr int kRows = 8 * kMTiles;
  float sum[2][kRows];

  __device__ __forceinline__ void zero() {
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int m = 0; m < kRows; ++m) sum[r][m] = 0.0f;
  }

  __device__ __forceinline__ void add(const Chunks<float>& w, const float* xs, int x_row, int local_k, int rows,
                                      int lane) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int at = local_k + u * kStepK + (lane % 4) * kChunk;
      float wv[2][kChunk];
      memcpy(wv[0], &w.c[u][0], sizeof(wv[0]));
      memcpy(wv[1], &w.c[u][1], sizeof(wv[1]));
#pragma unroll
      for (int m = 0; m < kRows; ++m) {
        if (m >= rows) break;  // the same for the whole warp
        const float4 lo = *reinterpret_cast<const float4*>(xs + m * x_row + at);
        const float4 hi = *reinterpret_cast<const float4*>(xs + m * x_row + at + 4);
        const float x[kChunk] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
        for (int e = 0; e < kChunk; ++e) {
          sum[0][m] = fmaf(wv[0][e], x[e], sum[0][m]);
          sum[1][m] = fmaf(wv[1][e], x[e], sum[1][m]);
        }
      }
    }
  }

  // The quad's four k subsets added; every lane of the quad ends with the same bits.
  __device__ __forceinline__ void finish() {
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int m = 0; m < kRows; ++m) sum[r][m] = quad_sum(sum[r][m]);
  }

  __device__ __forceinline__ void store(float* tile, int column0, int lane) const {
    const int group = lane / 4, quad = lane % 4;
#pragma unroll
    for (int m = 0; m < kRows; ++m) {
      if (m % 4 != quad) continue;
      tile[m * kTileStride + column0 + group] = sum[0][m];
      tile[m * kTileStride + column0 + group + 8] = sum[1][m];
    }
  }
};

template <typename T, int kMTiles>
using Accumulator = std::conditional_t<std::is_same_v<T, float>, FmaAccumulator<kMTiles>, MmaAccumulator<T, kMTiles>>;

// ---- inputs ----

// 1 / rms of a whole input row: one warp, lane-strided, the same bits in every block.
template <typename T, bool kVector>
__device__ float row_rstd(const T* row, std::int64_t k, float eps, int lane) {
  constexpr int W = kVector ? kVectorWidth<T> : 1;
  float squares = 0.0f;
#pragma unroll 4
  for (std::int64_t j = static_cast<std::int64_t>(lane) * W; j < k; j += 32 * W) {
    float v[W];
    load_elements<T, W, kVector>(row + j, v);
#pragma unroll
    for (int i = 0; i < W; ++i) squares += v[i] * v[i];
  }
  return rmsnorm_detail::inverse_rms(warp_sum(squares), k, eps);
}

// W elements of input row m from column k on, after the prologue.
template <typename T, int W, bool kVector>
__device__ __forceinline__ void input_elements(const Params& p, int m, std::int64_t k, const float* rstd,
                                               float (&v)[W]) {
  const std::int64_t at = m * p.a.x_row_stride + k;
  load_elements<T, W, kVector>(static_cast<const T*>(p.a.x) + at, v);
  if (p.prologue == GemvPrologue::kRmsNorm) {
    float w[W];
    load_elements<T, W, kVector>(static_cast<const T*>(p.a.norm_weight) + k, w);
#pragma unroll
    for (int i = 0; i < W; ++i)
      v[i] = round_through<T>(__fmul_rn(w[i], rmsnorm_detail::normalized<T>(v[i], rstd[m], p.a.round_normalized)));
  } else if (p.prologue == GemvPrologue::kSwiglu) {
    float u[W];
    load_elements<T, W, kVector>(static_cast<const T*>(p.a.up) + at, u);
#pragma unroll
    for (int i = 0; i < W; ++i) v[i] = round_through<T>(round_through<T>(v[i] / (1.0f + expf(-v[i]))) * u[i]);
  }
}

// The block's input rows, columns [k_begin, k_end), into shared memory, zero-filled to whole
// iterations. Every thread calls it (it synchronizes).
template <typename T, bool kVector>
__device__ void fill_inputs(const Params& p, T* xs, float* rstd, std::int64_t k_begin, std::int64_t k_end) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (p.prologue == GemvPrologue::kRmsNorm) {
    for (int m = warp; m < p.rows; m += kWarps) {
      const float r = row_rstd<T, kVector>(static_cast<const T*>(p.a.x) + m * p.a.x_row_stride, p.k, p.a.eps, lane);
      if (lane == 0) rstd[m] = r;
    }
    __syncthreads();
  }
  constexpr int W = kVector ? kVectorWidth<T> : 1;
  const int span = static_cast<int>(k_end - k_begin);
  const int per_row = (span + kIterK - 1) / kIterK * kIterK / W;
  for (int i = threadIdx.x; i < p.rows * per_row; i += kThreads) {
    const int m = i / per_row, j = (i - m * per_row) * W;
    float v[W];
    if (j < span) {
      input_elements<T, W, kVector>(p, m, k_begin + j, rstd, v);
    } else {
#pragma unroll
      for (int e = 0; e < W; ++e) v[e] = 0.0f;
    }
    store_elements<T, W, kVector>(xs + m * p.x_row_elements + j, v);
  }
  __syncthreads();
}

// ---- the warp's 16 columns over the block's k range ----

template <typename T, int kMTiles, bool kVector>
__device__ __forceinline__ void stream_weights(Accumulator<T, kMTiles>& acc, Chunks<T>& w, const WarpRows<T>& rows,
                                               const Params& p, const T* xs, std::int64_t k_begin, std::int64_t k_end,
                                               int lane) {
  for (std::int64_t k = k_begin; k < k_end; k += kIterK) {
    const bool more = k + kIterK < k_end;
    const int local_k = static_cast<int>(k - k_begin);
    if constexpr (sizeof(T) == 2) {
      Chunks<T> next;
      if (more) load_iteration<T, kVector>(next, rows, k + kIterK, p.k, lane);
      acc.add(w, xs, p.x_row_elements, local_k, p.rows, lane);
      if (more) w = next;
    } else {
      // float32 chunks are twice the registers: no second set in flight.
      acc.add(w, xs, p.x_row_elements, local_k, p.rows, lane);
      if (more) load_iteration<T, kVector>(w, rows, k + kIterK, p.k, lane);
    }
  }
  acc.finish();
}

// ---- epilogue ----

template <typename T>
__device__ __forceinline__ void write_out(const Params& p, float acc, int m, std::int64_t column) {
  if (p.a.bias != nullptr) acc += load_float(static_cast<const T*>(p.a.bias) + column);
  float y = round_through<T>(acc);
  if (p.a.residual != nullptr)
    y = load_float(static_cast<const T*>(p.a.residual) + m * p.a.residual_row_stride + column) + y;
  store_float(static_cast<T*>(p.a.out) + m * p.n + column, y);
}

// The strip's [rows, 128] result: out directly with one split; else this block's partial,
// and the last block of the strip adds all partials in split order.
template <typename T>
__device__ void finish_strip(const Params& p, const float* tile) {
  __shared__ bool last;
  const std::int64_t column0 = static_cast<std::int64_t>(blockIdx.x) * kStripColumns;
  const int count = p.rows * kStripColumns;
  if (p.splits == 1) {
    for (int i = threadIdx.x; i < count; i += kThreads) {
      const int m = i / kStripColumns, c = i % kStripColumns;
      if (column0 + c < p.n) write_out<T>(p, tile[m * kTileStride + c], m, column0 + c);
    }
    return;
  }
  float* mine = p.partial + static_cast<std::int64_t>(blockIdx.y) * p.rows * p.n;
  for (int i = threadIdx.x; i < count; i += kThreads) {
    const int m = i / kStripColumns, c = i % kStripColumns;
    if (column0 + c < p.n) __stcg(mine + m * p.n + column0 + c, tile[m * kTileStride + c]);
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(p.counters + blockIdx.x, 1u) == static_cast<unsigned>(p.splits - 1);
  __syncthreads();
  if (!last) return;
  __threadfence();
  for (int i = threadIdx.x; i < count; i += kThreads) {
    const int m = i / kStripColumns, c = i % kStripColumns;
    const std::int64_t column = column0 + c;
    if (column >= p.n) continue;
    float sum = 0.0f;
    for (int s = 0; s < p.splits; ++s)
      sum += __ldcg(p.partial + (static_cast<std::int64_t>(s) * p.rows + m) * p.n + column);
    write_out<T>(p, sum, m, column);
  }
  if (threadIdx.x == 0) p.counters[blockIdx.x] = 0u;
}

template <typename T, int kMTiles, bool kVector>
__global__ void __launch_bounds__(kThreads) gemv_kernel(Params p) {
  extern __shared__ __align__(16) unsigned char shared[];
  __shared__ float rstd[kGemvMaxRows];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const std::int64_t k_begin = static_cast<std::int64_t>(blockIdx.y) * p.k_per_split;
  const std::int64_t k_end = min(p.k, k_begin + p.k_per_split);
  const std::int64_t n0 = static_cast<std::int64_t>(blockIdx.x) * kStripColumns + warp * kWarpColumns;
  const bool active = n0 < p.n && k_begin < k_end;  // the same for the whole warp
  const WarpRows<T> rows = warp_rows<T>(p, n0, lane);
  Chunks<T> w;
  if (active) load_iteration<T, kVector>(w, rows, k_begin, p.k, lane);
  T* xs = reinterpret_cast<T*>(shared);
  fill_inputs<T, kVector>(p, xs, rstd, k_begin, k_end);
  Accumulator<T, kMTiles> acc;
  acc.zero();
  if (active) stream_weights<T, kMTiles, kVector>(acc, w, rows, p, xs, k_begin, k_end, lane);
  __syncthreads();  // the tile reuses the input rows' shared memory
  float* tile = reinterpret_cast<float*>(shared);
  acc.store(tile, warp * kWarpColumns, lane);
  __syncthreads();
  finish_strip<T>(p, tile);
}

// ---- host ----

bool vectorizable(const GemvArgs& a, GemvPrologue prologue, const GemvShape& s, std::int64_t element) {
  const std::int64_t width = 16 / element;
  if (s.k % width != 0 || a.weight_row_stride % width != 0 || a.x_row_stride % width != 0) return false;
  if (!is_aligned(a.weight, 16) || !is_aligned(a.x, 16)) return false;
  if (prologue == GemvPrologue::kSwiglu && !is_aligned(a.up, 16)) return false;
  return prologue != GemvPrologue::kRmsNorm || is_aligned(a.norm_weight, 16);
}

void check_arguments(const GemvArgs& a, GemvPrologue prologue, const GemvShape& s) {
  const std::string op = "gemv: ";
  ZT_REQUIRE(s.rows >= 0 && s.rows <= kGemvMaxRows,
             op + "rows must be 0 to " + std::to_string(kGemvMaxRows) + ", got " + std::to_string(s.rows));
  ZT_REQUIRE(s.k >= 0 && s.n >= 0, op + "k and n must not be negative");
  if (s.rows == 0 || s.n == 0) return;
  ZT_REQUIRE(a.x != nullptr && a.weight != nullptr && a.out != nullptr, op + "x, weight and out must be set");
  ZT_REQUIRE(a.x_row_stride >= s.k && a.weight_row_stride >= s.k,
             op + "the row strides of x and weight must be at least k = " + std::to_string(s.k));
  ZT_REQUIRE(prologue != GemvPrologue::kRmsNorm || a.norm_weight != nullptr,
             op + "the RMSNorm prologue needs norm_weight");
  ZT_REQUIRE(prologue != GemvPrologue::kSwiglu || a.up != nullptr, op + "the SwiGLU prologue needs up");
  ZT_REQUIRE(a.residual == nullptr || a.residual_row_stride >= s.n,
             op + "the residual's row stride must be at least n");
}

template <typename T, int kMTiles, bool kVector>
void launch(const Params& p, const Plan& plan, cudaStream_t stream) {
  auto kernel = gemv_kernel<T, kMTiles, kVector>;
  if (plan.shared_bytes > 48 * 1024)
    ZT_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(plan.shared_bytes)));
  const dim3 grid(static_cast<unsigned>(plan.strips), static_cast<unsigned>(plan.splits));
  kernel<<<grid, kThreads, plan.shared_bytes, stream>>>(p);
}

// Input-row tiles of 8 (the MMA's N) as a template argument, so accumulators stay in registers.
template <typename T, bool kVector>
void launch_rows(const Params& p, const Plan& plan, cudaStream_t stream) {
  switch ((p.rows + 7) / 8) {
    case 1:
      return launch<T, 1, kVector>(p, plan, stream);
    case 2:
      return launch<T, 2, kVector>(p, plan, stream);
    case 3:
      return launch<T, 3, kVector>(p, plan, stream);
    default:
      return launch<T, 4, kVector>(p, plan, stream);
  }
}

}  // namespace

int gemv_splits(DType dtype, const GemvShape& shape) {
  return make_plan(static_cast<std::int64_t>(dtype_size(dtype)), shape).splits;
}

std::size_t gemv_workspace_bytes(DType dtype, const GemvShape& shape) {
  return make_plan(static_cast<std::int64_t>(dtype_size(dtype)), shape).workspace_bytes;
}

void gemv(const GemvArgs& args, GemvPrologue prologue, DType dtype, const GemvShape& shape, void* workspace,
          cudaStream_t stream) {
  check_arguments(args, prologue, shape);
  if (shape.rows == 0 || shape.n == 0) return;
  const auto element = static_cast<std::int64_t>(dtype_size(dtype));
  const Plan plan = make_plan(element, shape);
  ZT_REQUIRE(plan.splits <= kMaxSplits, "gemv: k = " + std::to_string(shape.k) + " is too long");
  ZT_REQUIRE(plan.strips <= kMaxStrips, "gemv: n = " + std::to_string(shape.n) + " is more than " +
                                            std::to_string(kMaxStrips * kStripColumns) + " columns");
  Params p;
  p.a = args;
  p.prologue = prologue;
  p.rows = static_cast<int>(shape.rows);
  p.k = shape.k;
  p.n = shape.n;
  p.k_per_split = plan.k_per_split;
  p.x_row_elements = plan.x_row_elements;
  p.splits = plan.splits;
  std::optional<ScratchBuffer> scratch;
  if (plan.splits > 1) {
    if (workspace == nullptr) {
      scratch.emplace(plan.workspace_bytes, stream);
      workspace = scratch->data();
      ZT_CUDA_CHECK(cudaMemsetAsync(workspace, 0, static_cast<std::size_t>(plan.strips) * 4, stream));
    }
    p.counters = static_cast<unsigned*>(workspace);
    p.partial = reinterpret_cast<float*>(static_cast<char*>(workspace) + plan.counter_bytes);
  }
  dispatch_float_type(dtype, "gemv", [&]<typename T>() {
    if (vectorizable(args, prologue, shape, element))
      launch_rows<T, true>(p, plan, stream);
    else
      launch_rows<T, false>(p, plan, stream);
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda
