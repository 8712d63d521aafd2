#include "cuda/optim/adamw.cuh"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "cuda/common/cuda_common.cuh"
#include "cuda/common/multi_tensor.cuh"
#include "cuda/common/vector_io.cuh"
#include "cuda/elementwise/elementwise_dispatch.cuh"
#include "runtime/check.h"

namespace zt::cuda {
namespace {

constexpr int kThreads = 512;
constexpr std::int64_t kChunk = 65536;  // elements per block
constexpr int kPack = 4;                // elements per vector access (16 bytes of float32)
constexpr int kPacksInFlight = 2;       // packs a thread loads before it updates any

// One tensor as a launch sees it. head < 0: some buffer is misaligned against the others,
// so every element goes one by one; otherwise elements [0, head) go one by one and the rest
// in packs of 4 that are aligned in every buffer.
struct Slot {
  float* master;
  float* exp_avg;
  float* exp_avg_sq;
  const void* grad;
  void* working;
  std::int64_t n;
  std::int32_t head;
  float decay_factor;
};

struct Launch {
  Slot tensors[kMaxTensorsPerLaunch];
  ChunkIndex index;
  AdamWScalars s;
};
static_assert(sizeof(Launch) <= 4096, "a launch's arguments must fit the classic 4 KiB kernel-argument limit");

std::int64_t first_packed(const Slot& t) { return t.head < 0 ? 0 : std::min<std::int64_t>(t.head, t.n); }

std::int64_t chunks_of(const Slot& t) {
  if (t.n == 0) return 0;
  std::int64_t rest = t.n - first_packed(t);
  return std::max<std::int64_t>(1, (rest + kChunk - 1) / kChunk);
}

// The elements of this block's chunk: one-by-one ranges [0, head) (chunk 0 only) and
// [packed_end, end), packs in [begin, packed_end).
struct ChunkRange {
  std::int64_t head, begin, packed_end, end;
};

__device__ __forceinline__ ChunkRange chunk_range(const Slot& t, std::int64_t local) {
  const std::int64_t first = t.head < 0 ? 0 : (t.head < t.n ? t.head : t.n);
  const std::int64_t begin = first + local * kChunk;
  const std::int64_t end = begin + kChunk < t.n ? begin + kChunk : t.n;
  const std::int64_t packed_end = t.head < 0 ? begin : begin + (end - begin) / kPack * kPack;
  return {local == 0 ? first : 0, begin, packed_end, end};
}

// The update of one element, with the rounding of each float operation spelled out.
__device__ __forceinline__ void adamw_element(float& p, float& m, float& v, float grad, float decay,
                                              const AdamWScalars& s) {
  const float g = __fdiv_rn(grad, s.grad_scale);
  p = __fmul_rn(p, decay);
  m = __fadd_rn(__fmul_rn(s.beta1, m), __fmul_rn(s.one_minus_beta1, g));
  v = __fadd_rn(__fmul_rn(s.beta2, v), __fmul_rn(s.one_minus_beta2, __fmul_rn(g, g)));
  const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(v), s.bias_correction2_sqrt), s.eps);
  p = __fsub_rn(p, __fmul_rn(s.step_size, __fdiv_rn(m, denom)));
}

template <typename G, typename W, bool kWorking>
__device__ __forceinline__ void update_one(const Slot& t, std::int64_t i, const AdamWScalars& s) {
  float p = t.master[i], m = t.exp_avg[i], v = t.exp_avg_sq[i];
  adamw_element(p, m, v, load_float(static_cast<const G*>(t.grad) + i), t.decay_factor, s);
  t.master[i] = p;
  t.exp_avg[i] = m;
  t.exp_avg_sq[i] = v;
  if constexpr (kWorking) store_float(static_cast<W*>(t.working) + i, p);
}

// kPacks packs `stride` elements apart: every load is issued before the first update so that
// each thread keeps kPacks × 64 bytes in flight (one pack alone left AdamW at 0.76–0.85 of the
// copy bandwidth).
template <typename G, typename W, bool kWorking, int kPacks>
__device__ __forceinline__ void update_packs(const Slot& t, std::int64_t i, std::int64_t stride,
                                             const AdamWScalars& s) {
  float p[kPacks][kPack], m[kPacks][kPack], v[kPacks][kPack], g[kPacks][kPack];
#pragma unroll
  for (int u = 0; u < kPacks; ++u) {
    load_vector<float, kPack>(t.master + i + u * stride, p[u]);
    load_vector<float, kPack>(t.exp_avg + i + u * stride, m[u]);
    load_vector<float, kPack>(t.exp_avg_sq + i + u * stride, v[u]);
    load_vector<G, kPack>(static_cast<const G*>(t.grad) + i + u * stride, g[u]);
  }
#pragma unroll
  for (int u = 0; u < kPacks; ++u) {
#pragma unroll
    for (int k = 0; k < kPack; ++k) adamw_element(p[u][k], m[u][k], v[u][k], g[u][k], t.decay_factor, s);
    store_vector<float, kPack>(t.master + i + u * stride, p[u]);
    store_vector<float, kPack>(t.exp_avg + i + u * stride, m[u]);
    store_vector<float, kPack>(t.exp_avg_sq + i + u * stride, v[u]);
    if constexpr (kWorking) store_vector<W, kPack>(static_cast<W*>(t.working) + i + u * stride, p[u]);
  }
}

template <typename G>
__global__ void __launch_bounds__(kThreads) find_non_finite_kernel(Launch launch, bool* found) {
  const int which = launch.index.tensor_of(static_cast<std::int32_t>(blockIdx.x));
  const Slot t = launch.tensors[which];
  const ChunkRange r = chunk_range(t, blockIdx.x - launch.index.begin[which]);
  const G* grad = static_cast<const G*>(t.grad);
  bool bad = false;
  for (std::int64_t i = threadIdx.x; i < r.head; i += blockDim.x) bad |= !isfinite(load_float(grad + i));
  for (std::int64_t i = r.begin + kPack * threadIdx.x; i < r.packed_end; i += kPack * blockDim.x) {
    float g[kPack];
    load_vector<G, kPack>(grad + i, g);
#pragma unroll
    for (int k = 0; k < kPack; ++k) bad |= !isfinite(g[k]);
  }
  for (std::int64_t i = r.packed_end + threadIdx.x; i < r.end; i += blockDim.x) bad |= !isfinite(load_float(grad + i));
  if (__syncthreads_or(bad) && threadIdx.x == 0) *found = true;  // every writer stores the same value
}

template <typename G, typename W, bool kWorking>
__global__ void __launch_bounds__(kThreads) update_kernel(Launch launch, const bool* found_non_finite) {
  if (*found_non_finite) return;
  const int which = launch.index.tensor_of(static_cast<std::int32_t>(blockIdx.x));
  const Slot t = launch.tensors[which];
  const ChunkRange r = chunk_range(t, blockIdx.x - launch.index.begin[which]);
  for (std::int64_t i = threadIdx.x; i < r.head; i += blockDim.x) update_one<G, W, kWorking>(t, i, launch.s);
  const std::int64_t stride = kPack * blockDim.x;
  std::int64_t i = r.begin + kPack * threadIdx.x;
  for (; i + (kPacksInFlight - 1) * stride < r.packed_end; i += kPacksInFlight * stride)
    update_packs<G, W, kWorking, kPacksInFlight>(t, i, stride, launch.s);
  for (; i < r.packed_end; i += stride) update_packs<G, W, kWorking, 1>(t, i, stride, launch.s);
  for (std::int64_t i = r.packed_end + threadIdx.x; i < r.end; i += blockDim.x)
    update_one<G, W, kWorking>(t, i, launch.s);
}

// The shared head of all five buffers, or -1 when they disagree.
std::int32_t common_head(const AdamWTensor& t) {
  std::int64_t head = aligned_head(t.master, 4, kPack);
  auto agree = [&](const void* p, std::size_t bytes) { return aligned_head(p, bytes, kPack) == head; };
  bool same = head >= 0 && agree(t.exp_avg, 4) && agree(t.exp_avg_sq, 4) && agree(t.grad, dtype_size(t.grad_dtype)) &&
              (t.working == nullptr || agree(t.working, dtype_size(t.working_dtype)));
  return same ? static_cast<std::int32_t>(head) : -1;
}

Slot slot_of(const AdamWTensor& t) {
  return {t.master, t.exp_avg, t.exp_avg_sq, t.grad, t.working, t.n, common_head(t), t.decay_factor};
}

// Tensors that one kernel instantiation serves: same gradient dtype, same working dtype
// (or none).
using GroupKey = std::pair<DType, int>;
GroupKey key_of(const AdamWTensor& t) {
  return {t.grad_dtype, t.working == nullptr ? -1 : static_cast<int>(t.working_dtype)};
}

template <typename Kernel>
void launch_group(const std::vector<std::size_t>& members, const std::vector<Slot>& slots, const AdamWScalars& s,
                  Kernel&& kernel) {
  Launch args{};
  args.s = s;
  launch_slots(members, slots, args, chunks_of, kernel);
}

}  // namespace

void adamw_step_multi(const AdamWTensor* tensors, std::size_t count, const AdamWScalars& scalars, bool check_finite,
                      bool* found_non_finite, cudaStream_t stream) {
  ZT_CUDA_CHECK(cudaMemsetAsync(found_non_finite, 0, sizeof(bool), stream));
  std::vector<Slot> slots;
  std::map<GroupKey, std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < count; ++i) {
    slots.push_back(slot_of(tensors[i]));
    groups[key_of(tensors[i])].push_back(i);
  }
  for (const auto& [key, members] : check_finite ? groups : decltype(groups)())
    dispatch_float_type(key.first, "adamw_step_multi", [&]<typename G>() {
      launch_group(members, slots, scalars, [&](const Launch& launch, unsigned blocks) {
        find_non_finite_kernel<G><<<blocks, kThreads, 0, stream>>>(launch, found_non_finite);
      });
    });
  for (const auto& [key, members] : groups)
    dispatch_float_type(key.first, "adamw_step_multi", [&]<typename G>() {
      if (key.second < 0) {
        launch_group(members, slots, scalars, [&](const Launch& launch, unsigned blocks) {
          update_kernel<G, float, false><<<blocks, kThreads, 0, stream>>>(launch, found_non_finite);
        });
        return;
      }
      dispatch_float_type(static_cast<DType>(key.second), "adamw_step_multi", [&]<typename W>() {
        launch_group(members, slots, scalars, [&](const Launch& launch, unsigned blocks) {
          update_kernel<G, W, true><<<blocks, kThreads, 0, stream>>>(launch, found_non_finite);
        });
      });
    });
}

}  // namespace zt::cuda
