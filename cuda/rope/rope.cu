// One thread per (token, group of heads, lane): a rotary lane owns a few pairs of each head
// of its group (q's heads, then k's), computes their cos/sin once and applies them to all
// of them, so the transcendental work is shared by 8 heads instead of done per element; a
// copy lane moves a slice of the pass-through dims (out of place, or into the cache). When
// the layout allows, a rotary lane owns half a 16-byte vector of pairs (8-byte accesses:
// fewer registers, so more threads in flight) and a copy lane a whole one. With a cache write
// (kCache), v's heads follow k's in the same enumeration and are stored unrotated (to v_out
// when set); k's and v's heads go to their pool rows as they are stored, so a step's RoPE and
// KV write are one launch that reads k once.
#include "cuda/rope/rope.cuh"

#include <string>

#include "cuda/common/cuda_common.cuh"
#include "cuda/common/programmatic_launch.cuh"
#include "cuda/common/vector_io.cuh"
#include "cuda/elementwise/elementwise_dispatch.cuh"
#include "cuda/rope/rotate_pair.cuh"
#include "runtime/check.h"
#include "runtime/error.h"

namespace zt::cuda {
namespace {

// Heads loaded before any is rotated, so each thread has several loads in flight even
// though, in place, a store may alias a later load.
constexpr int kHeadBatch = 4;
// Heads (of q, then k) one thread covers: cos/sin are shared by up to this many heads, and
// threads stay short enough for the grid to be many even waves. A launch of few tokens (a
// decode step) gives each thread fewer heads, down to one, until it has kFewThreads threads:
// there the dependent loads of a long thread, not the trigonometry, set the time.
constexpr int kMaxHeadsPerThread = 8;
constexpr std::int64_t kFewThreads = 32768;
constexpr int kThreads = 256;

struct RopeArgs {
  RopeOperand q, k;
  RopeCacheWrite cache;
  std::int64_t v_heads;  // k.heads with a cache write, else 0
  const void* positions;
  RopeShape shape;
  int rotary_lanes;
  int copy_lanes;
  int heads_per_thread;
  bool inverse;
  RopeFrequencies frequencies;
};

// Head h of the concatenated heads of q, k (and v, with a cache write) at one token: where it
// is read, where it is stored (y: null for v; cache: its pool row, null without one or for a
// skipped slot), and whether it rotates (v does not).
template <typename T>
struct HeadRef {
  const T* x;
  T* y;
  T* cache;
  bool in_place;
  bool rotates;
};
template <typename T>
__device__ __forceinline__ T* pool_row(const RopeArgs& a, void* pool, std::int64_t token, std::int64_t kv_head) {
  const std::int64_t slot = a.cache.slots[token];
  if (slot < 0 || slot >= a.cache.num_slots) return nullptr;
  return static_cast<T*>(pool) + (slot * a.k.heads + kv_head) * a.shape.head_dim;
}
template <typename T, bool kCache>
__device__ __forceinline__ HeadRef<T> head_ref(const RopeArgs& a, std::int64_t token, std::int64_t h) {
  if (h < a.q.heads) {
    const std::int64_t at = h * a.shape.head_dim;
    return {static_cast<const T*>(a.q.x) + token * a.q.x_token_stride + at,
            static_cast<T*>(a.q.y) + token * a.q.y_token_stride + at, nullptr, a.q.x == a.q.y, true};
  }
  const std::int64_t kv_head = h - a.q.heads;
  if (kv_head < a.k.heads) {
    const std::int64_t at = kv_head * a.shape.head_dim;
    T* cache = nullptr;
    if constexpr (kCache) cache = pool_row<T>(a, a.cache.key_pool, token, kv_head);
    return {static_cast<const T*>(a.k.x) + token * a.k.x_token_stride + at,
            static_cast<T*>(a.k.y) + token * a.k.y_token_stride + at, cache, a.k.x == a.k.y, true};
  }
  const std::int64_t v_head = kv_head - a.k.heads;
  const std::int64_t at = v_head * a.shape.head_dim;
  T* copy =
      a.cache.v_out == nullptr ? nullptr : static_cast<T*>(a.cache.v_out) + token * a.cache.v_out_token_stride + at;
  return {static_cast<const T*>(a.cache.v) + token * a.cache.v_token_stride + at, copy,
          pool_row<T>(a, a.cache.value_pool, token, v_head), false, false};
}

// Pairs first_pair .. first_pair + P of heads [head_begin, head_end). Rotate-half: the
// lane's elements are P at first_pair and P at first_pair + rotary_dim / 2; interleaved:
// 2P at 2 * first_pair.
template <typename T, int P, bool kInterleaved, bool kVector, bool kCache>
__device__ void rotate_lane(const RopeArgs& a, std::int64_t token, int lane, std::int64_t head_begin,
                            std::int64_t head_end, float position) {
  constexpr int kLo = kInterleaved ? 2 * P : P;  // interleaved lanes use lo alone, 2P elements wide
  const int first_pair = lane * P;
  float c[P], s[P];
#pragma unroll
  for (int i = 0; i < P; ++i) rope_cos_sin<T>(position, a.frequencies.inv_freq[first_pair + i], a.inverse, c[i], s[i]);
  const std::int64_t lo_at = kInterleaved ? 2 * first_pair : first_pair;
  const std::int64_t hi_at = first_pair + a.shape.rotary_dim / 2;
  for (std::int64_t h0 = head_begin; h0 < head_end; h0 += kHeadBatch) {
    float lo[kHeadBatch][kLo], hi[kHeadBatch][P];
#pragma unroll
    for (int b = 0; b < kHeadBatch; ++b) {
      if (h0 + b >= head_end) break;
      const T* head = head_ref<T, kCache>(a, token, h0 + b).x;
      load_elements<T, kLo, kVector>(head + lo_at, lo[b]);
      if constexpr (!kInterleaved) load_elements<T, P, kVector>(head + hi_at, hi[b]);
    }
#pragma unroll
    for (int b = 0; b < kHeadBatch; ++b) {
      if (h0 + b >= head_end) break;
      const HeadRef<T> head = head_ref<T, kCache>(a, token, h0 + b);
      if (!kCache || head.rotates) {
#pragma unroll
        for (int i = 0; i < P; ++i) {
          if constexpr (kInterleaved)
            rope_rotate_pair<T>(lo[b][2 * i], lo[b][2 * i + 1], c[i], s[i]);
          else
            rope_rotate_pair<T>(lo[b][i], hi[b][i], c[i], s[i]);
        }
      }
      auto store_to = [&](T* out) {
        if (out == nullptr) return;
        store_elements<T, kLo, kVector>(out + lo_at, lo[b]);
        if constexpr (!kInterleaved) store_elements<T, P, kVector>(out + hi_at, hi[b]);
      };
      store_to(head.y);
      if constexpr (kCache) store_to(head.cache);
    }
  }
}

// N pass-through elements of heads [head_begin, head_end): to y for operands rotated out of
// place, and to the cache rows of k and v.
template <typename T, int N, bool kVector, bool kCache>
__device__ void copy_lane(const RopeArgs& a, std::int64_t token, int lane, std::int64_t head_begin,
                          std::int64_t head_end) {
  const std::int64_t at = a.shape.rotary_dim + static_cast<std::int64_t>(lane) * N;
  for (std::int64_t h = head_begin; h < head_end; ++h) {
    HeadRef<T> head = head_ref<T, kCache>(a, token, h);
    T* y = head.in_place ? nullptr : head.y;
    if (y == nullptr && head.cache == nullptr) continue;
    float v[N];
    load_elements<T, N, kVector>(head.x + at, v);
    if (y != nullptr) store_elements<T, N, kVector>(y + at, v);
    if (head.cache != nullptr) store_elements<T, N, kVector>(head.cache + at, v);
  }
}

template <typename T, typename Position, int P, bool kInterleaved, bool kVector, bool kCache>
__global__ void __launch_bounds__(kThreads) rope_kernel(RopeArgs a) {
  wait_for_prior_grids();  // launched after prior: a decode step's RoPE + KV write is a chain link
  allow_next_grid_launch();
  constexpr int kCopyWidth = kVector ? kVectorWidth<T> : 1;
  const std::int64_t lanes = a.rotary_lanes + a.copy_lanes;
  const std::int64_t heads = a.q.heads + a.k.heads + a.v_heads;
  const std::int64_t head_groups = (heads + a.heads_per_thread - 1) / a.heads_per_thread;
  const std::int64_t items = a.shape.tokens * head_groups * lanes;
  const auto* positions = static_cast<const Position*>(a.positions);
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < items;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const int lane = static_cast<int>(i % lanes);
    const std::int64_t group = (i / lanes) % head_groups, token = i / lanes / head_groups;
    const std::int64_t head_begin = group * a.heads_per_thread;
    const std::int64_t head_end = head_begin + a.heads_per_thread < heads ? head_begin + a.heads_per_thread : heads;
    if (lane < a.rotary_lanes)
      rotate_lane<T, P, kInterleaved, kVector, kCache>(a, token, lane, head_begin, head_end,
                                                       static_cast<float>(positions[token]));
    else
      copy_lane<T, kCopyWidth, kVector, kCache>(a, token, lane - a.rotary_lanes, head_begin, head_end);
  }
}

bool vectorizable(const RopeArgs& a, int width) {
  auto operand_ok = [&](const RopeOperand& op) {
    return op.heads == 0 || (is_aligned(op.x, 16) && is_aligned(op.y, 16) && op.x_token_stride % width == 0 &&
                             op.y_token_stride % width == 0);
  };
  const bool cache_ok = a.v_heads == 0 || (is_aligned(a.cache.v, 16) && a.cache.v_token_stride % width == 0 &&
                                           is_aligned(a.cache.key_pool, 16) && is_aligned(a.cache.value_pool, 16) &&
                                           is_aligned(a.cache.v_out, 16) && a.cache.v_out_token_stride % width == 0);
  return operand_ok(a.q) && operand_ok(a.k) && cache_ok && a.shape.head_dim % width == 0 &&
         a.shape.rotary_dim % width == 0;
}

bool out_of_place(const RopeOperand& op) { return op.heads > 0 && op.x != op.y; }

template <typename T, typename Position>
void launch(RopeArgs& a, bool vector, cudaStream_t stream) {
  constexpr int W = kVectorWidth<T>;
  const std::int64_t half = a.shape.rotary_dim / 2, pass = a.shape.head_dim - a.shape.rotary_dim;
  const bool copies = out_of_place(a.q) || out_of_place(a.k) || a.v_heads > 0;
  a.copy_lanes = copies ? static_cast<int>(vector ? pass / W : pass) : 0;
  auto go = [&]<int P, bool kInterleaved, bool kVector>() {
    a.rotary_lanes = static_cast<int>(half / P);
    const std::int64_t heads = a.q.heads + a.k.heads + a.v_heads;
    auto items_at = [&](int per_thread) {
      return a.shape.tokens * ((heads + per_thread - 1) / per_thread) * (a.rotary_lanes + a.copy_lanes);
    };
    a.heads_per_thread = kMaxHeadsPerThread;
    while (a.heads_per_thread > 1 && items_at(a.heads_per_thread) < kFewThreads) a.heads_per_thread /= 2;
    const int blocks = grid_size(items_at(a.heads_per_thread), kThreads);
    if (a.v_heads > 0)
      launch_after_prior(rope_kernel<T, Position, P, kInterleaved, kVector, true>, blocks, kThreads, 0, stream, a);
    else
      launch_after_prior(rope_kernel<T, Position, P, kInterleaved, kVector, false>, blocks, kThreads, 0, stream, a);
  };
  if (a.shape.interleaved) {
    if (vector)
      go.template operator()<W / 2, true, true>();
    else
      go.template operator()<1, true, false>();
  } else {
    if (vector)
      go.template operator()<W / 2, false, true>();
    else
      go.template operator()<1, false, false>();
  }
}

}  // namespace

void rope_rotate(const RopeOperand& q, const RopeOperand& k, DType dtype, const void* positions, DType position_dtype,
                 const RopeShape& shape, const RopeFrequencies& frequencies, bool inverse, cudaStream_t stream,
                 const RopeCacheWrite* cache) {
  if (shape.tokens == 0 || q.heads + k.heads == 0) return;
  ZT_REQUIRE(cache == nullptr || (!inverse && k.heads > 0),
             "rope_rotate: a cache write goes with the forward rotation of k");
  ZT_REQUIRE(shape.rotary_dim > 0 && shape.rotary_dim % 2 == 0 && shape.rotary_dim <= shape.head_dim &&
                 shape.rotary_dim / 2 <= kMaxRopePairs,
             "rope_rotate: rotary_dim " + std::to_string(shape.rotary_dim) +
                 " must be even, positive, at most head_dim " + std::to_string(shape.head_dim) + " and at most " +
                 std::to_string(2 * kMaxRopePairs));
  RopeArgs a{q,       k,          cache ? *cache : RopeCacheWrite{}, cache ? k.heads : 0, positions, shape, 0, 0, 0,
             inverse, frequencies};
  dispatch_float_type(dtype, "rope_rotate", [&]<typename T>() {
    bool vector = vectorizable(a, kVectorWidth<T>);
    dispatch_index_type(position_dtype, "rope_rotate: positions",
                        [&]<typename Position>() { launch<T, Position>(a, vector, stream); });
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda
