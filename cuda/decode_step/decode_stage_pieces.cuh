// The device pieces the persistent decode kernel's stages are made of (persistent_decode.cu):
// a warp's dot products of weight rows with every sequence's row, RMSNorm into shared memory,
// one attention head of one sequence, and the L2 prefetch of a stage's first rows. Each is
// written for a block of kWarps warps that owns its whole share of a stage.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/common/cuda_common.cuh"
#include "cuda/common/shuffle_reduce.cuh"
#include "cuda/common/vector_io.cuh"
#include "cuda/decode_step/persistent_decode.cuh"
#include "cuda/norm/rmsnorm_row.cuh"

namespace zt::cuda::decode_step {

inline constexpr int kWarps = 16;
inline constexpr int kThreads = 32 * kWarps;
inline constexpr int kMaxHeadDim = 256;
inline constexpr int kMaxGrid = 1024;  // blocks a workspace's argmax partials have room for

// 8 weights (16 bytes) streamed past L1: each is read once per step.
template <typename T>
__device__ __forceinline__ void load8_weights(const T* p, float (&out)[8]) {
  uint4 raw;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(raw.x), "=r"(raw.y), "=r"(raw.z), "=r"(raw.w)
      : "l"(p));
  const T* v = reinterpret_cast<const T*>(&raw);
#pragma unroll
  for (int i = 0; i < 8; ++i) out[i] = static_cast<float>(v[i]);
}

// A team: the `splits` warps of one block that share each pair of weight rows of a stage,
// warp `part` summing every splits-th 256-column slice of them, so that a stage with fewer row
// pairs than the grid has warps still keeps every warp streaming. index: the team's place
// among the grid's `count` teams. splits divides kWarps.
struct Team {
  int splits, part, index, count;
};

__device__ __forceinline__ Team team_of(int splits) {
  const int warp = threadIdx.x / 32;
  return {splits, warp % splits, static_cast<int>(blockIdx.x) * (kWarps / splits) + warp / splits,
          static_cast<int>(gridDim.x) * (kWarps / splits)};
}

// Sums over the warp of row r of w0 (and of w1, when set) times each of the B rows of x
// ([B, k] with row stride k, in shared or global memory), over the columns of the team part's
// slices; every lane gets every sum.
template <typename T, int B>
__device__ __forceinline__ void warp_dot2(const T* w0, const T* w1, const T* x, int k, const Team& team,
                                          float (&acc)[2][B]) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int b = 0; b < B; ++b) acc[0][b] = acc[1][b] = 0.0f;
  // 16-byte loads a row in flight per lane: eight at one or two rows of x (a row of up to 2,048
  // columns in one round trip to memory), two at more (their registers). The sums' order is the
  // same either way.
  constexpr int kInFlight = B <= 2 ? 8 : 2;
#pragma unroll kInFlight
  for (int c = team.part * 256 + lane * 8; c < k; c += 256 * team.splits) {
    float a[8], d[8];
    load8_weights(w0 + c, a);
    if (w1 != nullptr) load8_weights(w1 + c, d);
#pragma unroll
    for (int b = 0; b < B; ++b) {
      float xv[8];
      load_vector<T, 8>(x + static_cast<std::int64_t>(b) * k + c, xv);
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[0][b] = fmaf(a[i], xv[i], acc[0][b]);
      if (w1 != nullptr) {
#pragma unroll
        for (int i = 0; i < 8; ++i) acc[1][b] = fmaf(d[i], xv[i], acc[1][b]);
      }
    }
  }
#pragma unroll
  for (int b = 0; b < B; ++b) {
    acc[0][b] = warp_sum(acc[0][b]);
    if (w1 != nullptr) acc[1][b] = warp_sum(acc[1][b]);
  }
}

// The team's warps meet (a named barrier per team; 0 is __syncthreads').
__device__ __forceinline__ void team_barrier(const Team& team) {
  asm volatile("bar.sync %0, %1;" ::"r"(1 + static_cast<int>(threadIdx.x / 32) / team.splits), "r"(32 * team.splits)
               : "memory");
}

// The team's sums: each part's acc added into part 0's, in part order (every lane of part 0
// gets them). partials: [kWarps, 2, B] floats of shared memory. Every warp of the team calls it.
template <int B>
__device__ __forceinline__ void team_sum(const Team& team, float (&acc)[2][B], float* partials) {
  if (team.splits == 1) return;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (team.part != 0 && lane == 0) {
#pragma unroll
    for (int b = 0; b < B; ++b) {
      partials[(warp * 2) * B + b] = acc[0][b];
      partials[(warp * 2 + 1) * B + b] = acc[1][b];
    }
  }
  team_barrier(team);
  if (team.part == 0) {
    for (int p = 1; p < team.splits; ++p)
#pragma unroll
      for (int b = 0; b < B; ++b) {
        acc[0][b] += partials[((warp + p) * 2) * B + b];
        acc[1][b] += partials[((warp + p) * 2 + 1) * B + b];
      }
  }
  team_barrier(team);  // the partials are read before the next rows' overwrite them
}

// Asks L2 for the bytes [p, p + bytes), spread over the warp's lanes, one 128-byte line each.
__device__ __forceinline__ void prefetch_l2(const void* p, std::int64_t bytes) {
  const char* base = static_cast<const char*>(p);
  for (std::int64_t at = (threadIdx.x % 32) * 128; at < bytes; at += 32 * 128)
    asm volatile("prefetch.global.L2 [%0];" ::"l"(base + at));
}

// The B rows of src [B, hidden] RMS-normalised by `weight` into dst (shared memory), as
// cuda/norm rounds them; a null weight copies the rows. Every thread of the block takes 8
// columns of each row at a time, so a row costs one load's latency, not a warp's walk along
// it; each warp's squares go to `sums` ([kWarps, B] floats of shared memory) and are added in
// warp order. Ends with the block synchronised.
template <typename T, int B>
__device__ void normalize_rows(const T* src, const T* weight, T* dst, const DecodeModelDims& d, float* sums) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float squares[B];
#pragma unroll
  for (int b = 0; b < B; ++b) squares[b] = 0.0f;
  for (int c = threadIdx.x * 8; c < d.hidden; c += kThreads * 8) {
#pragma unroll
    for (int b = 0; b < B; ++b) {
      float v[8];
      load_vector<T, 8>(src + static_cast<std::int64_t>(b) * d.hidden + c, v);
#pragma unroll
      for (int i = 0; i < 8; ++i) squares[b] = fmaf(v[i], v[i], squares[b]);
    }
  }
#pragma unroll
  for (int b = 0; b < B; ++b) {
    squares[b] = warp_sum(squares[b]);
    if (lane == 0) sums[warp * B + b] = squares[b];
  }
  __syncthreads();
  float rstd[B];
#pragma unroll
  for (int b = 0; b < B; ++b) {
    float total = 0.0f;
    for (int w = 0; w < kWarps; ++w) total += sums[w * B + b];
    rstd[b] = rmsnorm_detail::inverse_rms(total, d.hidden, d.norm_eps);
  }
  for (int c = threadIdx.x * 8; c < d.hidden; c += kThreads * 8) {
    float w[8];
    if (weight != nullptr) load_vector<T, 8>(weight + c, w);
#pragma unroll
    for (int b = 0; b < B; ++b) {
      float v[8];
      load_vector<T, 8>(src + static_cast<std::int64_t>(b) * d.hidden + c, v);
      if (weight != nullptr) {
#pragma unroll
        for (int i = 0; i < 8; ++i)
          v[i] = __fmul_rn(w[i], rmsnorm_detail::normalized<T>(v[i], rstd[b], d.round_normalized));
      }
      store_vector<T, 8>(dst + b * d.hidden + c, v);
    }
  }
  __syncthreads();
}

// The pair (lo, hi) rotated by (c, s) as cuda/rope rotates it, then rounded as it stores.
template <typename T>
__device__ __forceinline__ void rotate_pair(float& lo, float& hi, float c, float s) {
  const float new_lo = __fsub_rn(round_through<T>(__fmul_rn(lo, c)), round_through<T>(__fmul_rn(hi, s)));
  const float new_hi = __fadd_rn(round_through<T>(__fmul_rn(hi, c)), round_through<T>(__fmul_rn(lo, s)));
  lo = round_through<T>(new_lo);
  hi = round_through<T>(new_hi);
}

// RoPE of one head held as floats in shared memory, thread i < rotary_dim / 2 turning pair i.
template <typename T>
__device__ __forceinline__ void rotate_head(float* head, const DecodeModelDims& d, float position) {
  const int i = threadIdx.x;
  if (i >= d.rope.rotary_dim / 2) return;
  const float angle = __fmul_rn(position, d.frequencies.inv_freq[i]);
  const float c = round_through<T>(cosf(angle)), s = round_through<T>(sinf(angle));
  const int lo = d.rope.interleaved ? 2 * i : i;
  const int hi = d.rope.interleaved ? 2 * i + 1 : i + d.rope.rotary_dim / 2;
  rotate_pair<T>(head[lo], head[hi], c, s);
}

// Shared memory of one attention head: q, the new k and v, and each warp's running output.
struct HeadScratch {
  float* q;
  float* k;
  float* v;
  float* warp_max;  // [kWarps]
  float* warp_sum;  // [kWarps]
  float* warp_out;  // [kWarps, head_dim]
  float* rstd;      // [2]: q's and k's, where the heads are normalised
  __device__ explicit HeadScratch(float* base, int head_dim)
      : q(base),
        k(base + head_dim),
        v(base + 2 * head_dim),
        warp_max(base + 3 * head_dim),
        warp_sum(base + 3 * head_dim + kWarps),
        warp_out(base + 3 * head_dim + 2 * kWarps),
        rstd(base + 3 * head_dim + 2 * kWarps + kWarps * head_dim) {}
  static constexpr std::size_t floats(int head_dim) { return 3 * head_dim + 2 * kWarps + kWarps * head_dim + 2; }
};

// Qwen3's q/k norms: the head's q and new k (floats in shared memory, already rounded to T)
// RMS-normalised over head_dim by their weights, rounded as cuda/norm rounds them. Warp 0 sums
// q's squares and warp 1 k's; then threads [0, head_dim) scale q and [head_dim, 2 head_dim) k.
// Every thread of the block calls it; it ends synchronised.
template <typename T>
__device__ void normalize_head_pair(const HeadScratch& s, const T* q_weight, const T* k_weight,
                                    const DecodeModelDims& d) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (warp < 2) {
    const float* head = warp == 0 ? s.q : s.k;
    float squares = 0.0f;
    for (int c = lane; c < d.head_dim; c += 32) squares = fmaf(head[c], head[c], squares);
    squares = warp_sum(squares);
    if (lane == 0) s.rstd[warp] = rmsnorm_detail::inverse_rms(squares, d.head_dim, d.norm_eps);
  }
  __syncthreads();
  const int which = threadIdx.x / d.head_dim, c = threadIdx.x % d.head_dim;
  if (which < 2) {
    float* head = which == 0 ? s.q : s.k;
    const float weight = load_float((which == 0 ? q_weight : k_weight) + c);
    head[c] =
        round_through<T>(__fmul_rn(weight, rmsnorm_detail::normalized<T>(head[c], s.rstd[which], d.round_normalized)));
  }
  __syncthreads();
}

// Where token t of a sequence lies in a pool for kv head g, in elements.
__device__ __forceinline__ std::int64_t pool_at(const DecodeModelDims& d, const std::int32_t* pages, int t, int g) {
  const std::int64_t page = pages[t / d.block_size];
  return ((page * d.block_size + t % d.block_size) * d.kv_heads + g) * d.head_dim;
}

// Lanes that share one token in the attention stage: one per 8 columns of a head (a 16-byte
// load each), rounded up to a power of two so that xor shuffles sum a token's score.
__device__ __forceinline__ int lanes_per_token(int head_dim) {
  int lanes = 1;
  while (lanes * 8 < head_dim) lanes *= 2;
  return lanes;
}

// Rounds of tokens whose keys and values a warp has in flight in the attention stage, for a
// step of B rows: at 128 cached tokens a warp takes two to four rounds, and each round in
// flight hides one round trip to memory (behind its page-table load). Two at 1–4 rows; at 8
// rows (and three at any) the kernel's other live values leave too few registers and bfloat16
// spills (ptxas, sm_90a), so one.
template <int B>
constexpr int kAttentionRoundsAhead = B <= 4 ? 2 : 1;

// One warp's share of softmax(q · Kᵀ) · V over tokens [0, len): the warp takes 32 /
// lanes_per_token tokens a round, a token's lanes each owning 8 columns of its key, its value
// and the output, so a token costs one load per lane and every lane's loads are independent.
// The keys and values of the next kAhead rounds are in flight while the current one is summed, to hide the page table's
// and the pools' latency; the tokens are summed in order whatever the depth. Token len - 1 (this step's) comes from s.k
// / s.v, the rest from the pools. Leaves the warp's max, sum and unnormalised output in s.
template <typename T, int kAhead>
__device__ void attend_warp_share(const DecodeModelDims& d, const HeadScratch& s, const T* keys, const T* values,
                                  const std::int32_t* pages, int g, int len) {
  using Columns = Packed<T, 8>;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int group = lanes_per_token(d.head_dim), stride = kWarps * (32 / group);
  const int column = (lane % group) * 8;
  const bool owns = column < d.head_dim;  // lanes past head_dim / 8 add zeros
  const auto fetch = [&](int t, Columns& key, Columns& value) {
    if (!owns || t >= len - 1) return;
    const std::int64_t at = pool_at(d, pages, t, g) + column;
    key = *reinterpret_cast<const Columns*>(keys + at);
    value = *reinterpret_cast<const Columns*>(values + at);
  };
  float q[8], o[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    q[i] = owns ? s.q[column + i] : 0.0f;
    o[i] = 0.0f;
  }
  float m = -INFINITY, sum = 0.0f;
  const int first_token = warp * (32 / group) + lane / group;
  Columns key[kAhead], value[kAhead];
#pragma unroll
  for (int r = 0; r < kAhead; ++r) {
    key[r] = Columns{};
    value[r] = Columns{};
    fetch(first_token + r * stride, key[r], value[r]);
  }
  for (int base = warp * (32 / group); base < len; base += kAhead * stride) {
    const int t0 = first_token + (base - warp * (32 / group));
#pragma unroll
    for (int r = 0; r < kAhead; ++r) {
      if (base + r * stride >= len) break;  // the same for every lane of the warp
      const int t = t0 + r * stride;
      float k[8], v[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const bool fresh = t == len - 1 && owns;
        k[i] = fresh ? s.k[column + i] : static_cast<float>(key[r].v[i]);
        v[i] = fresh ? s.v[column + i] : static_cast<float>(value[r].v[i]);
      }
      key[r] = Columns{};
      value[r] = Columns{};
      fetch(t + kAhead * stride, key[r], value[r]);
      float dot = 0.0f;
#pragma unroll
      for (int i = 0; i < 8; ++i) dot = fmaf(q[i], k[i], dot);
      for (int offset = group / 2; offset > 0; offset /= 2) dot += __shfl_xor_sync(kFullWarpMask, dot, offset);
      const float score = t < len ? dot * d.softmax_scale : -INFINITY;
      const float new_max = fmaxf(m, warp_max(score));
      const float p = t < len ? expf(score - new_max) : 0.0f;
      const float rescale = m == -INFINITY ? 0.0f : expf(m - new_max);
      sum = fmaf(sum, rescale, p);
#pragma unroll
      for (int i = 0; i < 8; ++i) o[i] = fmaf(p, v[i], o[i] * rescale);
      m = new_max;
    }
  }
  // The warp's tokens were split over its lane groups: add the groups' sums and outputs.
  for (int offset = group; offset < 32; offset *= 2) {
    sum += __shfl_xor_sync(kFullWarpMask, sum, offset);
#pragma unroll
    for (int i = 0; i < 8; ++i) o[i] += __shfl_xor_sync(kFullWarpMask, o[i], offset);
  }
  if (lane == 0) {
    s.warp_max[warp] = m;
    s.warp_sum[warp] = sum;
  }
  if (lane < group && owns) {
#pragma unroll
    for (int i = 0; i < 8; ++i) s.warp_out[warp * d.head_dim + column + i] = o[i];
  }
}

// The warps' shares merged into the head's output row (rounded to T); zeros for no tokens.
template <typename T>
__device__ void merge_warp_shares(const DecodeModelDims& d, const HeadScratch& s, T* out) {
  const int c = threadIdx.x;
  if (c >= d.head_dim) return;
  float top = -INFINITY;
  for (int w = 0; w < kWarps; ++w) top = fmaxf(top, s.warp_max[w]);
  float total = 0.0f, value = 0.0f;
  if (top != -INFINITY) {
    for (int w = 0; w < kWarps; ++w) {
      if (s.warp_max[w] == -INFINITY) continue;
      const float weight = expf(s.warp_max[w] - top);
      total = fmaf(s.warp_sum[w], weight, total);
      value = fmaf(s.warp_out[w * d.head_dim + c], weight, value);
    }
  }
  store_float(out + c, total > 0.0f ? value / total : 0.0f);
}

}  // namespace zt::cuda::decode_step
