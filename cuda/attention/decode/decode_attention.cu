// Split-KV decode attention. Grid (split, kv head × head group, sequence): a block serves up
// to 16 query heads of one kv group, so the K/V it streams are read once for the whole group
// (GQA without copying K/V). Its token range is [split · split_tokens, (split + 1) ·
// split_tokens) cut at the sequence's length, which the block reads from seq_lens.
//
// Tensor-core kernel (bfloat16/float16, head_dim 64 or 128): the group's query rows, zero
// padded to 16, are the A operand of mma.sync; each of the 4 warps takes every 4th tile of 16
// tokens, gathers its K and V rows from their pages with 16-byte cp.async into its own
// double-buffered shared tiles (the next tile in flight while this one is used, no block
// barrier), and runs its own online softmax: S = Q·Kᵀ, scores scaled into the log2 domain,
// then the probabilities, rounded to the dtype, are the A operand of O += P·V. The warps'
// (max, sum, O) are merged through shared memory at the end.
//
// CUDA-core kernel (float32, and any other head_dim that is a multiple of 8 up to 256): the
// whole block walks 32-token tiles through shared memory (K, V and the scores as float), one
// thread per (head, token) score, one warp per head for the softmax, and one thread per
// (head, column) output accumulator. Simple and exact in fp32, not fast.
//
// Either kernel writes the normalised output directly when num_splits is 1; otherwise an fp32
// partial row and its log-sum-exp per (sequence, head, split), which the combine kernel (one
// warp per (sequence, head)) merges: out = Σ e^(lse_s − max) · O_s / Σ e^(lse_s − max), splits
// with lse = −inf skipped without reading their rows.
#include "cuda/attention/decode/decode_attention.cuh"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "cuda/attention/attention_layout.cuh"
#include "cuda/common/cuda_common.cuh"
#include "cuda/common/mma_warp.cuh"
#include "cuda/common/programmatic_launch.cuh"
#include "cuda/common/scratch_buffer.h"
#include "cuda/common/tile_smem.cuh"
#include "cuda/common/vector_io.cuh"
#include "cuda/elementwise/elementwise_dispatch.cuh"
#include "runtime/check.h"
#include "runtime/error.h"

namespace zt::cuda {
namespace {

using attention_detail::allow_shared_bytes;
using mma::FragA;
using mma::FragC;

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kGroupRows = 16;  // query heads one block serves: one mma row slab
constexpr int kMaxHeadDim = 256;
constexpr int kMinSplitTokens = 128;
constexpr int kMaxAutoSplits = 128;
constexpr int kResidentBlocks = 3;  // blocks of the tensor-core kernel at head_dim 128 one SM holds
constexpr int kSplitAlign = 16;     // split boundaries fall on tensor-core tile boundaries
constexpr unsigned kMaxGridYZ = 65535;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// What every block of a launch shares, fixed on the host.
struct Plan {
  int num_splits = 1;
  std::int64_t capacity = 0;     // tokens a block_table row addresses; longer lengths are cut to it
  int split_tokens = 0;          // tokens per split, a multiple of kSplitAlign
  int group = 1;                 // query heads per kv head
  int head_groups = 1;           // blocks per kv head: ceil(group / kGroupRows)
  float scale_log2 = 0.0f;       // softmax_scale · log2(e): scores go straight to the exp2 domain
  float* partial_out = nullptr;  // [batch, num_heads, num_splits, head_dim]; null when num_splits is 1
  float* partial_lse = nullptr;  // [batch, num_heads, num_splits]
};

int head_groups_of(const DecodeAttentionDims& dims) {
  const int group = dims.num_kv_heads > 0 ? dims.num_heads / dims.num_kv_heads : 1;
  return std::max(1, (group + kGroupRows - 1) / kGroupRows);
}

// The work of this block: sequence b, query heads h0 .. h0 + rows − 1 (all reading kv_head),
// tokens [begin, end) of the sequence; empty when begin >= end.
struct BlockWork {
  int b, kv_head, h0, rows, split;
  int begin, end;
};

__device__ __forceinline__ BlockWork block_work(const DecodeAttentionDims& d, const Plan& p,
                                                const std::int32_t* seq_lens) {
  BlockWork w;
  w.split = blockIdx.x;
  w.b = blockIdx.z;
  const int head_group = blockIdx.y % p.head_groups;
  w.kv_head = blockIdx.y / p.head_groups;
  w.h0 = w.kv_head * p.group + head_group * kGroupRows;
  w.rows = min(kGroupRows, p.group - head_group * kGroupRows);
  const std::int64_t len = max(std::int64_t{0}, min(static_cast<std::int64_t>(seq_lens[w.b]), p.capacity));
  const std::int64_t begin = static_cast<std::int64_t>(w.split) * p.split_tokens;
  w.begin = static_cast<int>(min(begin, len));
  w.end = static_cast<int>(min(begin + p.split_tokens, len));
  return w;
}

// Row (sequence b, head h, split) of the partial arrays.
__device__ __forceinline__ std::int64_t partial_row(const DecodeAttentionDims& d, const Plan& p, int b, int h,
                                                    int split) {
  return (static_cast<std::int64_t>(b) * d.num_heads + h) * p.num_splits + split;
}

template <typename T>
__device__ __forceinline__ const T* query_row(const T* q, const DecodeAttentionDims& d, int b, int h) {
  return q + b * d.q_batch_stride + h * d.q_head_stride;
}

// Where token t of sequence b lies in a pool for kv_head (in elements), or −1 when its page
// id is outside the pools.
__device__ __forceinline__ std::int64_t pool_offset(const DecodeAttentionDims& d, const std::int32_t* pages, int t,
                                                    int kv_head) {
  const std::int32_t page = pages[t / d.block_size];
  if (page < 0 || page >= d.num_blocks) return -1;
  return ((static_cast<std::int64_t>(page) * d.block_size + t % d.block_size) * d.num_kv_heads + kv_head) * d.head_dim;
}

// A block with no tokens: zeros as the output (num_splits 1, length 0), or an empty partial.
template <typename T>
__device__ void write_empty(const DecodeAttentionDims& d, const Plan& p, const BlockWork& w, T* out) {
  if (p.partial_out == nullptr) {
    for (int i = threadIdx.x; i < w.rows * d.head_dim; i += blockDim.x)
      store_float(
          out + (static_cast<std::int64_t>(w.b) * d.num_heads + w.h0 + i / d.head_dim) * d.head_dim + i % d.head_dim,
          0.0f);
  } else {
    for (int r = threadIdx.x; r < w.rows; r += blockDim.x)
      p.partial_lse[partial_row(d, p, w.b, w.h0 + r, w.split)] = -INFINITY;
  }
}

// Stores element c of head row r: the output itself when num_splits is 1, else the partial
// row; `max_log2` and `sum` are the row's softmax statistics (max in the log2 domain).
template <typename T>
__device__ __forceinline__ void store_result(const DecodeAttentionDims& d, const Plan& p, const BlockWork& w, int r,
                                             int c, float value, T* out) {
  if (p.partial_out == nullptr)
    store_float(out + (static_cast<std::int64_t>(w.b) * d.num_heads + w.h0 + r) * d.head_dim + c, value);
  else
    p.partial_out[partial_row(d, p, w.b, w.h0 + r, w.split) * d.head_dim + c] = value;
}

__device__ __forceinline__ void store_lse(const DecodeAttentionDims& d, const Plan& p, const BlockWork& w, int r,
                                          float max_log2, float sum) {
  if (p.partial_out != nullptr)
    p.partial_lse[partial_row(d, p, w.b, w.h0 + r, w.split)] = (max_log2 + log2f(sum)) * kLn2;
}

// ---- tensor-core kernel ----

template <int kD>
struct FastShape {
  static constexpr int kTileN = 16;  // tokens per warp tile: one k-step of P·V
  using QTile = tile::SmemTile<kGroupRows, kD>;
  using KvTile = tile::SmemTile<kTileN, kD>;
  static constexpr int kWarpBytes = 4 * KvTile::kBytes;  // K and V, two stages each
  static constexpr int kMergePitch = kD + 4;             // floats per row of a warp's staged O
  static constexpr int kSharedBytes = QTile::kBytes + kWarps * kWarpBytes;
  static_assert(kGroupRows * kMergePitch * 4 <= kWarpBytes, "a warp's staged O fits in its K/V stages");
  static_assert((kTileN * KvTile::kChunks) % 32 == 0, "every lane issues the same number of copies");
};

template <typename T, int kD>
__global__ void __launch_bounds__(kThreads)
    decode_fast_kernel(DecodeAttentionDims d, DecodeAttentionInputs in, Plan p, T* out) {
  using Shape = FastShape<kD>;
  using QTile = typename Shape::QTile;
  using KvTile = typename Shape::KvTile;
  constexpr int kTileN = Shape::kTileN;
  wait_for_prior_grids();
  allow_next_grid_launch();
  const BlockWork w = block_work(d, p, in.seq_lens);
  if (w.begin >= w.end) return write_empty(d, p, w, out);

  const T* q = static_cast<const T*>(in.q);
  const T* key_pool = static_cast<const T*>(in.key_pool);
  const T* value_pool = static_cast<const T*>(in.value_pool);
  const std::int32_t* pages = in.block_table + static_cast<std::int64_t>(w.b) * d.max_blocks_per_seq;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  extern __shared__ __align__(128) unsigned char fast_shared[];
  const std::uint32_t sq = mma::smem_address(fast_shared);
  unsigned char* warp_shared = fast_shared + QTile::kBytes + warp * Shape::kWarpBytes;
  const std::uint32_t sk = mma::smem_address(warp_shared), sv = sk + 2 * KvTile::kBytes;

  const int tiles = (w.end - w.begin + kTileN - 1) / kTileN;
  const int my_tiles = warp < tiles ? (tiles - warp + kWarps - 1) / kWarps : 0;
  auto tile_start = [&](int n) { return w.begin + (warp + n * kWarps) * kTileN; };

  // The warp's n-th tile into stage n % 2: lane r < 16 finds the pool offset of row r, and
  // the warp shares it; rows past the end or on a bad page are zero-filled.
  auto load_kv = [&](int n) {
    const int t0 = tile_start(n), valid = min(kTileN, w.end - t0);
    const long long mine = lane < valid ? pool_offset(d, pages, t0 + lane, w.kv_head) : -1;
    const std::uint32_t stage = (n & 1) * KvTile::kBytes;
#pragma unroll
    for (int j = 0; j < kTileN * KvTile::kChunks / 32; ++j) {
      const int i = lane + 32 * j, r = i / KvTile::kChunks, c = i % KvTile::kChunks;
      const long long offset = __shfl_sync(0xffffffffu, mine, r);
      const bool ok = offset >= 0;
      const std::int64_t at = ok ? offset + c * 8 : 0;
      tile::cp_async<16>(sk + stage + KvTile::offset(r, c), key_pool + at, ok);
      tile::cp_async<16>(sv + stage + KvTile::offset(r, c), value_pool + at, ok);
    }
  };

  // The group's query rows (zero past w.rows) in one copy group, the warp's first tile in the next.
  tile::load_tile_async<QTile, kThreads>(
      sq, w.rows, [&](int r) { return query_row(q, d, w.b, w.h0 + r); }, q);
  tile::cp_async_commit();
  if (my_tiles > 0) load_kv(0);
  tile::cp_async_commit();
  tile::cp_async_wait<1>();
  __syncthreads();  // every thread's share of Q has landed

  FragA q_frag[kD / 16];
#pragma unroll
  for (int kk = 0; kk < kD / 16; ++kk) q_frag[kk] = mma::load_a<QTile>(sq, 0, kk);
  FragC o[kD / 8];
  mma::zero(o);
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  const int group = lane / 4, quad = lane % 4;

  for (int n = 0; n < my_tiles; ++n) {
    if (n + 1 < my_tiles) load_kv(n + 1);  // its stage was last read in iteration n − 1
    tile::cp_async_commit();
    tile::cp_async_wait<1>();
    __syncwarp();  // tile n has landed for every lane
    const std::uint32_t stage = (n & 1) * KvTile::kBytes;
    const int valid = min(kTileN, w.end - tile_start(n));

    FragC s[kTileN / 8];
    mma::zero(s);
    mma::gemm_abt<T, KvTile, kD / 16, kTileN / 8>(
        s, [&](int kk) { return q_frag[kk]; }, sk + stage, 0);
#pragma unroll
    for (int n8 = 0; n8 < kTileN / 8; ++n8)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int column = 8 * n8 + 2 * quad + (e & 1);
        s[n8].x[e] = column < valid ? s[n8].x[e] * p.scale_log2 : -INFINITY;
      }
      // Online softmax per head row (group and group + 8). Every tile has a valid column, so
      // the new max is finite; exp2(−inf) = 0 covers the first tile and masked columns.
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      float row_max = m[half];
#pragma unroll
      for (int n8 = 0; n8 < kTileN / 8; ++n8) row_max = fmaxf(row_max, fmaxf(s[n8].x[2 * half], s[n8].x[2 * half + 1]));
      row_max = quad_max(row_max);
      const float rescale = mma::exp2_approx(m[half] - row_max);
      m[half] = row_max;
      float sum = 0.0f;
#pragma unroll
      for (int n8 = 0; n8 < kTileN / 8; ++n8)
#pragma unroll
        for (int e = 2 * half; e < 2 * half + 2; ++e) {
          s[n8].x[e] = mma::exp2_approx(s[n8].x[e] - row_max);
          sum += s[n8].x[e];
        }
      l[half] = l[half] * rescale + sum;
#pragma unroll
      for (int c = 0; c < kD / 8; ++c) {
        o[c].x[2 * half] *= rescale;
        o[c].x[2 * half + 1] *= rescale;
      }
    }
    FragA pa[kTileN / 16];
    mma::to_a<T>(pa, s);
    mma::gemm_ab<T, KvTile, kTileN / 16, kD / 8>(
        o, [&](int kk) { return pa[kk]; }, sv + stage, 0, 0);
    __syncwarp();  // every lane is done with this stage before it is refilled
  }
  tile::cp_async_wait<0>();

  // Merge the warps: each stages its unnormalised O in its own (now idle) K/V stages and its
  // row statistics in row_max / row_sum; then every thread merges some (row, 4 columns).
  __shared__ float row_max[kWarps][kGroupRows], row_sum[kWarps][kGroupRows];
  float* staged = reinterpret_cast<float*>(warp_shared);
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int r = group + 8 * half;
    const float total = quad_sum(l[half]);
    if (quad == 0) {
      row_max[warp][r] = m[half];
      row_sum[warp][r] = total;
    }
#pragma unroll
    for (int c = 0; c < kD / 8; ++c)
      *reinterpret_cast<float2*>(staged + r * Shape::kMergePitch + 8 * c + 2 * quad) =
          make_float2(o[c].x[2 * half], o[c].x[2 * half + 1]);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < w.rows * (kD / 4); i += kThreads) {
    const int r = i / (kD / 4), c = (i % (kD / 4)) * 4;
    float top = -INFINITY;
#pragma unroll
    for (int v = 0; v < kWarps; ++v) top = fmaxf(top, row_max[v][r]);  // finite: warp 0 saw tile 0
    float sum = 0.0f, acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int v = 0; v < kWarps; ++v) {
      const float weight = exp2f(row_max[v][r] - top);  // 0 for a warp that saw no tile
      sum += weight * row_sum[v][r];
      const float4 x = *reinterpret_cast<const float4*>(
          reinterpret_cast<const float*>(fast_shared + QTile::kBytes + v * Shape::kWarpBytes) + r * Shape::kMergePitch +
          c);
      acc[0] += weight * x.x, acc[1] += weight * x.y, acc[2] += weight * x.z, acc[3] += weight * x.w;
    }
    const float inverse = 1.0f / sum;
#pragma unroll
    for (int e = 0; e < 4; ++e) store_result(d, p, w, r, c + e, acc[e] * inverse, out);
    if (c == 0) store_lse(d, p, w, r, top, sum);
  }
}

// ---- CUDA-core kernel ----

constexpr int kGenericTileN = 32;                                          // tokens per tile: one per lane
constexpr int kGenericAccumulators = kGroupRows * kMaxHeadDim / kThreads;  // (head, column) pairs per thread

std::size_t generic_shared_bytes(int head_dim) {
  return sizeof(float) * (kGroupRows * head_dim             // Q, scaled into the log2 domain
                          + kGenericTileN * (head_dim + 1)  // K: threads read across rows
                          + kGenericTileN * head_dim        // V
                          + kGroupRows * kGenericTileN      // scores, then probabilities
                          + 3 * kGroupRows);                // running max, sum, rescale
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    decode_generic_kernel(DecodeAttentionDims d, DecodeAttentionInputs in, Plan p, T* out) {
  wait_for_prior_grids();
  allow_next_grid_launch();
  const BlockWork w = block_work(d, p, in.seq_lens);
  if (w.begin >= w.end) return write_empty(d, p, w, out);

  constexpr int kVec = kVectorWidth<T>;
  const int dim = d.head_dim, rows = w.rows, key_pitch = dim + 1, vectors = dim / kVec;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const T* q = static_cast<const T*>(in.q);
  const T* key_pool = static_cast<const T*>(in.key_pool);
  const T* value_pool = static_cast<const T*>(in.value_pool);
  const std::int32_t* pages = in.block_table + static_cast<std::int64_t>(w.b) * d.max_blocks_per_seq;

  extern __shared__ __align__(16) unsigned char generic_shared[];
  float* q_tile = reinterpret_cast<float*>(generic_shared);  // [rows][dim]
  float* k_tile = q_tile + kGroupRows * dim;                 // [32][dim + 1]
  float* v_tile = k_tile + kGenericTileN * key_pitch;        // [32][dim]
  float* scores = v_tile + kGenericTileN * dim;              // [rows][32]
  float* run_max = scores + kGroupRows * kGenericTileN;
  float* run_sum = run_max + kGroupRows;
  float* rescale = run_sum + kGroupRows;

  for (int i = threadIdx.x; i < rows * dim; i += kThreads)
    q_tile[i] = load_float(query_row(q, d, w.b, w.h0 + i / dim) + i % dim) * p.scale_log2;
  if (threadIdx.x < rows) {
    run_max[threadIdx.x] = -INFINITY;
    run_sum[threadIdx.x] = 0.0f;
  }
  float acc[kGenericAccumulators];
#pragma unroll
  for (int a = 0; a < kGenericAccumulators; ++a) acc[a] = 0.0f;

  for (int t0 = w.begin; t0 < w.end; t0 += kGenericTileN) {
    const int valid = min(kGenericTileN, w.end - t0);
    __syncthreads();  // the previous tile is consumed (first time: Q and the statistics are written)
    for (int i = threadIdx.x; i < valid * vectors; i += kThreads) {
      const int r = i / vectors, c = (i % vectors) * kVec;
      const std::int64_t offset = pool_offset(d, pages, t0 + r, w.kv_head);
      float key[kVec], value[kVec];
      if (offset >= 0) {
        load_vector<T, kVec>(key_pool + offset + c, key);
        load_vector<T, kVec>(value_pool + offset + c, value);
      } else {
#pragma unroll
        for (int e = 0; e < kVec; ++e) key[e] = value[e] = 0.0f;
      }
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        k_tile[r * key_pitch + c + e] = key[e];
        v_tile[r * dim + c + e] = value[e];
      }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < rows * kGenericTileN; i += kThreads) {
      const int r = i / kGenericTileN, j = i % kGenericTileN;
      float s = -INFINITY;
      if (j < valid) {
        const float* query = q_tile + r * dim;
        const float* key = k_tile + j * key_pitch;
        s = 0.0f;
        for (int c = 0; c < dim; ++c) s += query[c] * key[c];
      }
      scores[i] = s;
    }
    __syncthreads();
    for (int r = warp; r < rows; r += kWarps) {
      const float s = scores[r * kGenericTileN + lane];
      const float old_max = run_max[r];
      const float new_max = fmaxf(old_max, warp_max(s));  // finite: token t0 is valid
      const float e = exp2f(s - new_max);
      const float sum = warp_sum(e);
      scores[r * kGenericTileN + lane] = e;
      __syncwarp();  // every lane has read run_max[r] before lane 0 replaces it
      if (lane == 0) {
        const float factor = exp2f(old_max - new_max);
        rescale[r] = factor;
        run_sum[r] = run_sum[r] * factor + sum;
        run_max[r] = new_max;
      }
    }
    __syncthreads();
#pragma unroll
    for (int a = 0; a < kGenericAccumulators; ++a) {
      const int i = threadIdx.x + a * kThreads;
      if (i < rows * dim) {
        const int r = i / dim, c = i % dim;
        const float* prob = scores + r * kGenericTileN;
        float x = acc[a] * rescale[r];
        for (int j = 0; j < valid; ++j) x += prob[j] * v_tile[j * dim + c];
        acc[a] = x;
      }
    }
  }
#pragma unroll
  for (int a = 0; a < kGenericAccumulators; ++a) {
    const int i = threadIdx.x + a * kThreads;
    if (i < rows * dim) {
      const int r = i / dim, c = i % dim;
      store_result(d, p, w, r, c, acc[a] / run_sum[r], out);
      if (c == 0) store_lse(d, p, w, r, run_max[r], run_sum[r]);
    }
  }
}

// ---- merging the splits ----

// One warp per (sequence, head) row; lane l owns columns 4l .. 4l + 3, 4l + 128, ...
template <typename T>
__global__ void __launch_bounds__(kThreads) decode_combine_kernel(DecodeAttentionDims d, Plan p, T* out) {
  wait_for_prior_grids();
  allow_next_grid_launch();
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (row >= static_cast<std::int64_t>(d.batch) * d.num_heads) return;  // warp-uniform
  const int lane = threadIdx.x % 32, splits = p.num_splits, dim = d.head_dim;
  const float* lse = p.partial_lse + row * splits;
  const float* partial = p.partial_out + row * splits * dim;
  T* dst = out + row * dim;
  float top = -INFINITY;
  for (int s = lane; s < splits; s += 32) top = fmaxf(top, lse[s]);
  top = warp_max(top);
  if (top == -INFINITY) {  // a sequence of length 0
    for (int c = lane; c < dim; c += 32) store_float(dst + c, 0.0f);
    return;
  }
  float sum = 0.0f;
  for (int s = lane; s < splits; s += 32) sum += expf(lse[s] - top);
  const float inverse = 1.0f / warp_sum(sum);
  for (int c = 4 * lane; c < dim; c += 128) {
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int s = 0; s < splits; ++s) {
      const float x = lse[s];
      if (x == -INFINITY) continue;  // an empty split: its row was never written
      const float weight = expf(x - top);
      const float4 v = *reinterpret_cast<const float4*>(partial + static_cast<std::int64_t>(s) * dim + c);
      acc[0] += weight * v.x, acc[1] += weight * v.y, acc[2] += weight * v.z, acc[3] += weight * v.w;
    }
#pragma unroll
    for (int e = 0; e < 4; ++e) store_float(dst + c + e, acc[e] * inverse);
  }
}

// ---- host side ----

void check_dims(const DecodeAttentionDims& dims, int num_splits) {
  const std::string op = "decode attention kernel: ";
  ZT_REQUIRE(dims.head_dim >= 8 && dims.head_dim <= kMaxHeadDim && dims.head_dim % 8 == 0,
             op + "head_dim " + std::to_string(dims.head_dim) + " must be a multiple of 8 from 8 to " +
                 std::to_string(kMaxHeadDim));
  ZT_REQUIRE(dims.num_kv_heads >= 1 && dims.num_heads % dims.num_kv_heads == 0,
             op + "num_heads " + std::to_string(dims.num_heads) + " must be a multiple of num_kv_heads " +
                 std::to_string(dims.num_kv_heads));
  ZT_REQUIRE(dims.block_size >= 1 && dims.max_blocks_per_seq >= 0 && dims.num_blocks >= 0,
             op + "block_size " + std::to_string(dims.block_size) + " must be positive and max_blocks_per_seq " +
                 std::to_string(dims.max_blocks_per_seq) + " and num_blocks " + std::to_string(dims.num_blocks) +
                 " non-negative");
  ZT_REQUIRE(num_splits >= 1 && num_splits <= kDecodeAttentionMaxSplits,
             op + "num_splits " + std::to_string(num_splits) + " must be in 1 .. " +
                 std::to_string(kDecodeAttentionMaxSplits));
  ZT_REQUIRE(static_cast<unsigned>(dims.batch) <= kMaxGridYZ &&
                 static_cast<std::int64_t>(dims.num_kv_heads) * head_groups_of(dims) <= kMaxGridYZ,
             op + "batch " + std::to_string(dims.batch) + " and num_kv_heads × ceil(group / 16) must each be at most " +
                 std::to_string(kMaxGridYZ));
}

int split_tokens_of(const DecodeAttentionDims& dims, int num_splits) {
  const std::int64_t per_split = (dims.capacity() + num_splits - 1) / num_splits;
  const std::int64_t aligned =
      std::max<std::int64_t>(kSplitAlign, (per_split + kSplitAlign - 1) / kSplitAlign * kSplitAlign);
  return static_cast<int>(std::min<std::int64_t>(aligned, std::int64_t{1} << 30));
}

template <typename T>
bool fast_path_takes(const DecodeAttentionDims& dims, const DecodeAttentionInputs& in) {
  if constexpr (!mma::kIsHalf16<T>) {
    return false;
  } else {
    return (dims.head_dim == 64 || dims.head_dim == 128) && is_aligned(in.q, 16) && dims.q_batch_stride % 8 == 0 &&
           dims.q_head_stride % 8 == 0;
  }
}

template <typename T, int kD>
void launch_fast(const DecodeAttentionDims& dims, const DecodeAttentionInputs& in, const Plan& plan, dim3 grid, T* out,
                 cudaStream_t stream) {
  auto kernel = decode_fast_kernel<T, kD>;
  constexpr int kBytes = FastShape<kD>::kSharedBytes;
  allow_shared_bytes(kernel, kBytes);
  launch_after_prior(kernel, grid, kThreads, kBytes, stream, dims, in, plan, out);
}

}  // namespace

int decode_attention_num_splits(const DecodeAttentionDims& dims, int multiprocessors) {
  const std::int64_t blocks = static_cast<std::int64_t>(dims.batch) * dims.num_kv_heads * head_groups_of(dims);
  if (blocks <= 0 || dims.capacity() <= 0) return 1;
  // As many splits as keep every block in one wave: more would queue a second, partial wave.
  const std::int64_t resident = static_cast<std::int64_t>(kResidentBlocks) * std::max(multiprocessors, 1);
  const std::int64_t wanted = resident / blocks;
  const std::int64_t by_length = std::max<std::int64_t>(1, dims.capacity() / kMinSplitTokens);
  return static_cast<int>(std::max<std::int64_t>(1, std::min({wanted, by_length, std::int64_t{kMaxAutoSplits}})));
}

int decode_attention_num_splits(const DecodeAttentionDims& dims) {
  int device = 0, multiprocessors = 0;
  ZT_CUDA_CHECK(cudaGetDevice(&device));
  ZT_CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
  return decode_attention_num_splits(dims, multiprocessors);
}

std::size_t decode_attention_workspace_bytes(const DecodeAttentionDims& dims, int num_splits) {
  if (num_splits <= 1) return 0;
  return static_cast<std::size_t>(dims.batch) * static_cast<std::size_t>(dims.num_heads) *
         static_cast<std::size_t>(num_splits) * static_cast<std::size_t>(dims.head_dim + 1) * sizeof(float);
}

void decode_attention(const DecodeAttentionDims& dims_in, const DecodeAttentionInputs& inputs, DType dtype, void* out,
                      int num_splits, void* workspace, cudaStream_t stream) {
  check_dims(dims_in, num_splits);
  if (dims_in.batch == 0 || dims_in.num_heads == 0) return;
  DecodeAttentionDims dims = dims_in;
  if (dims.q_head_stride == 0) dims.q_head_stride = dims.head_dim;
  if (dims.q_batch_stride == 0) dims.q_batch_stride = static_cast<std::int64_t>(dims.num_heads) * dims.head_dim;
  ZT_REQUIRE(is_aligned(inputs.key_pool, 16) && is_aligned(inputs.value_pool, 16),
             "decode attention kernel: key_pool and value_pool must start on 16-byte boundaries (pages are read 16 "
             "bytes at a time); pass pools allocated on their own");
  ZT_REQUIRE(workspace == nullptr || is_aligned(workspace, 16),
             "decode attention kernel: the workspace must start on a 16-byte boundary");

  Plan plan;
  plan.num_splits = num_splits;
  plan.capacity = dims.capacity();
  plan.split_tokens = split_tokens_of(dims, num_splits);
  plan.group = dims.num_heads / dims.num_kv_heads;
  plan.head_groups = head_groups_of(dims);
  plan.scale_log2 = dims.softmax_scale * kLog2e;
  const std::size_t workspace_bytes = decode_attention_workspace_bytes(dims, num_splits);
  std::unique_ptr<ScratchBuffer> scratch;
  if (workspace_bytes > 0) {
    if (workspace == nullptr) {
      scratch = std::make_unique<ScratchBuffer>(workspace_bytes, stream);
      workspace = scratch->data();
    }
    plan.partial_out = static_cast<float*>(workspace);
    plan.partial_lse =
        plan.partial_out + static_cast<std::size_t>(dims.batch) * dims.num_heads * num_splits * dims.head_dim;
  }

  const dim3 grid(static_cast<unsigned>(num_splits), static_cast<unsigned>(dims.num_kv_heads * plan.head_groups),
                  static_cast<unsigned>(dims.batch));
  dispatch_float_type(dtype, "decode_attention", [&]<typename T>() {
    T* result = static_cast<T*>(out);
    if (fast_path_takes<T>(dims, inputs)) {
      if constexpr (mma::kIsHalf16<T>) {
        if (dims.head_dim == 64)
          launch_fast<T, 64>(dims, inputs, plan, grid, result, stream);
        else
          launch_fast<T, 128>(dims, inputs, plan, grid, result, stream);
      }
    } else {
      auto kernel = decode_generic_kernel<T>;
      const std::size_t bytes = generic_shared_bytes(dims.head_dim);
      allow_shared_bytes(kernel, bytes);
      launch_after_prior(kernel, grid, kThreads, bytes, stream, dims, inputs, plan, result);
    }
    ZT_CUDA_CHECK(cudaGetLastError());
    if (num_splits > 1) {
      const std::int64_t rows = static_cast<std::int64_t>(dims.batch) * dims.num_heads;
      launch_after_prior(decode_combine_kernel<T>, static_cast<unsigned>((rows + kWarps - 1) / kWarps), kThreads, 0,
                         stream, dims, plan, result);
      ZT_CUDA_CHECK(cudaGetLastError());
    }
  });
}

}  // namespace zt::cuda
