// One thread per (token, group of heads, lane): a rotary lane owns a few pairs of each head
// of its group (q's heads, then k's), computes their cos/sin once and applies them to all
// of them, so the transcendental work is shared by 8 heads instead of done per element; a
// copy lane moves a slice of the pass-through dims (out of place only). When the layout
// allows, a rotary lane owns half a 16-byte vector of pairs (8-byte accesses: fewer
// registers, so more threads in flight) and a copy lane a whole one.
#include "cuda/rope/rope.cuh"

#include <string>

#include "cuda/common/cuda_common.cuh"
#include "cuda/common/vector_io.cuh"
#include "cuda/elementwise/elementwise_dispatch.cuh"
#include "runtime/check.h"
#include "runtime/error.h"

namespace zt::cuda {
namespace {

// Heads loaded before any is rotated, so each thread has several loads in flight even
// though, in place, a store may alias a later load.
constexpr int kHeadBatch = 4;
// Heads (of q, then k) one thread covers: cos/sin are shared by this many heads, and threads
// stay short enough for the grid to be many even waves.
constexpr int kHeadsPerThread = 8;
constexpr int kThreads = 256;

struct RopeArgs {
  RopeOperand q, k;
  const void* positions;
  RopeShape shape;
  int rotary_lanes;
  int copy_lanes;
  bool inverse;
  RopeFrequencies frequencies;
};

// The pair (lo, hi) rotated by (c, s), each product and the result rounded to T.
template <typename T>
__device__ __forceinline__ void rotate(float& lo, float& hi, float c, float s) {
  float new_lo = __fsub_rn(round_through<T>(__fmul_rn(lo, c)), round_through<T>(__fmul_rn(hi, s)));
  float new_hi = __fadd_rn(round_through<T>(__fmul_rn(hi, c)), round_through<T>(__fmul_rn(lo, s)));
  lo = new_lo;
  hi = new_hi;
}

// Pairs first_pair .. first_pair + P of every head. Rotate-half: the lane's elements are
// P at first_pair and P at first_pair + rotary_dim / 2; interleaved: 2P at 2 * first_pair.
// Head h of the concatenated heads of q and k: its input and output at one token.
template <typename T>
struct HeadRef {
  const T* x;
  T* y;
  bool in_place;
};
template <typename T>
__device__ __forceinline__ HeadRef<T> head_ref(const RopeArgs& a, std::int64_t token, std::int64_t h) {
  const bool in_q = h < a.q.heads;
  const RopeOperand& op = in_q ? a.q : a.k;
  const std::int64_t at = (in_q ? h : h - a.q.heads) * a.shape.head_dim;
  return {static_cast<const T*>(op.x) + token * op.x_token_stride + at,
          static_cast<T*>(op.y) + token * op.y_token_stride + at, op.x == op.y};
}

// Pairs first_pair .. first_pair + P of heads [head_begin, head_end). Rotate-half: the
// lane's elements are P at first_pair and P at first_pair + rotary_dim / 2; interleaved:
// 2P at 2 * first_pair.
template <typename T, int P, bool kInterleaved, bool kVector>
__device__ void rotate_lane(const RopeArgs& a, std::int64_t token, int lane, std::int64_t head_begin,
                            std::int64_t head_end, float position) {
  const int first_pair = lane * P;
  float c[P], s[P];
#pragma unroll
  for (int i = 0; i < P; ++i) {
    float angle = __fmul_rn(position, a.frequencies.inv_freq[first_pair + i]);
    float sine = sinf(angle);
    c[i] = round_through<T>(cosf(angle));
    s[i] = round_through<T>(a.inverse ? -sine : sine);
  }
  const std::int64_t lo_at = kInterleaved ? 2 * first_pair : first_pair;
  const std::int64_t hi_at = first_pair + a.shape.rotary_dim / 2;
  for (std::int64_t h0 = head_begin; h0 < head_end; h0 += kHeadBatch) {
    // Interleaved lanes use lo alone, 2P elements wide.
    float lo[kHeadBatch][kInterleaved ? 2 * P : P], hi[kHeadBatch][P];
#pragma unroll
    for (int b = 0; b < kHeadBatch; ++b) {
      if (h0 + b >= head_end) break;
      const T* head = head_ref<T>(a, token, h0 + b).x;
      load_elements<T, kInterleaved ? 2 * P : P, kVector>(head + lo_at, lo[b]);
      if constexpr (!kInterleaved) load_elements<T, P, kVector>(head + hi_at, hi[b]);
    }
#pragma unroll
    for (int b = 0; b < kHeadBatch; ++b) {
      if (h0 + b >= head_end) break;
      T* head = head_ref<T>(a, token, h0 + b).y;
#pragma unroll
      for (int i = 0; i < P; ++i) {
        if constexpr (kInterleaved)
          rotate<T>(lo[b][2 * i], lo[b][2 * i + 1], c[i], s[i]);
        else
          rotate<T>(lo[b][i], hi[b][i], c[i], s[i]);
      }
      store_elements<T, kInterleaved ? 2 * P : P, kVector>(head + lo_at, lo[b]);
      if constexpr (!kInterleaved) store_elements<T, P, kVector>(head + hi_at, hi[b]);
    }
  }
}

// N pass-through elements of heads [head_begin, head_end), for operands rotated out of place.
template <typename T, int N, bool kVector>
__device__ void copy_lane(const RopeArgs& a, std::int64_t token, int lane, std::int64_t head_begin,
                          std::int64_t head_end) {
  const std::int64_t at = a.shape.rotary_dim + static_cast<std::int64_t>(lane) * N;
  for (std::int64_t h = head_begin; h < head_end; ++h) {
    HeadRef<T> head = head_ref<T>(a, token, h);
    if (head.in_place) continue;
    float v[N];
    load_elements<T, N, kVector>(head.x + at, v);
    store_elements<T, N, kVector>(head.y + at, v);
  }
}

template <typename T, typename Position, int P, bool kInterleaved, bool kVector>
__global__ void __launch_bounds__(kThreads) rope_kernel(RopeArgs a) {
  constexpr int kCopyWidth = kVector ? kVectorWidth<T> : 1;
  const std::int64_t lanes = a.rotary_lanes + a.copy_lanes;
  const std::int64_t heads = a.q.heads + a.k.heads;
  const std::int64_t head_groups = (heads + kHeadsPerThread - 1) / kHeadsPerThread;
  const std::int64_t items = a.shape.tokens * head_groups * lanes;
  const auto* positions = static_cast<const Position*>(a.positions);
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < items;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const int lane = static_cast<int>(i % lanes);
    const std::int64_t group = (i / lanes) % head_groups, token = i / lanes / head_groups;
    const std::int64_t head_begin = group * kHeadsPerThread;
    const std::int64_t head_end = head_begin + kHeadsPerThread < heads ? head_begin + kHeadsPerThread : heads;
    if (lane < a.rotary_lanes)
      rotate_lane<T, P, kInterleaved, kVector>(a, token, lane, head_begin, head_end,
                                               static_cast<float>(positions[token]));
    else
      copy_lane<T, kCopyWidth, kVector>(a, token, lane - a.rotary_lanes, head_begin, head_end);
  }
}

bool vectorizable(const RopeOperand& q, const RopeOperand& k, const RopeShape& shape, int width) {
  auto operand_ok = [&](const RopeOperand& op) {
    return op.heads == 0 || (is_aligned(op.x, 16) && is_aligned(op.y, 16) && op.x_token_stride % width == 0 &&
                             op.y_token_stride % width == 0);
  };
  return operand_ok(q) && operand_ok(k) && shape.head_dim % width == 0 && shape.rotary_dim % width == 0;
}

bool out_of_place(const RopeOperand& op) { return op.heads > 0 && op.x != op.y; }

template <typename T, typename Position>
void launch(RopeArgs& a, bool vector, cudaStream_t stream) {
  constexpr int W = kVectorWidth<T>;
  const std::int64_t half = a.shape.rotary_dim / 2, pass = a.shape.head_dim - a.shape.rotary_dim;
  const bool copies = out_of_place(a.q) || out_of_place(a.k);
  a.copy_lanes = copies ? static_cast<int>(vector ? pass / W : pass) : 0;
  auto go = [&]<int P, bool kInterleaved, bool kVector>() {
    a.rotary_lanes = static_cast<int>(half / P);
    std::int64_t head_groups = (a.q.heads + a.k.heads + kHeadsPerThread - 1) / kHeadsPerThread;
    std::int64_t items = a.shape.tokens * head_groups * (a.rotary_lanes + a.copy_lanes);
    rope_kernel<T, Position, P, kInterleaved, kVector><<<grid_size(items, kThreads), kThreads, 0, stream>>>(a);
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
                 const RopeShape& shape, const RopeFrequencies& frequencies, bool inverse, cudaStream_t stream) {
  if (shape.tokens == 0 || q.heads + k.heads == 0) return;
  ZT_REQUIRE(shape.rotary_dim > 0 && shape.rotary_dim % 2 == 0 && shape.rotary_dim <= shape.head_dim &&
                 shape.rotary_dim / 2 <= kMaxRopePairs,
             "rope_rotate: rotary_dim " + std::to_string(shape.rotary_dim) +
                 " must be even, positive, at most head_dim " + std::to_string(shape.head_dim) + " and at most " +
                 std::to_string(2 * kMaxRopePairs));
  RopeArgs a{q, k, positions, shape, 0, 0, inverse, frequencies};
  dispatch_float_type(dtype, "rope_rotate", [&]<typename T>() {
    bool vector = vectorizable(q, k, shape, kVectorWidth<T>);
    dispatch_index_type(position_dtype, "rope_rotate: positions",
                        [&]<typename Position>() { launch<T, Position>(a, vector, stream); });
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda
