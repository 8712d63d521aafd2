// What the RMSNorm forward and backward kernels share: how a row is spread over threads
// (the plan), the kernel arguments, and the per-row pieces of arithmetic, written once so
// that both directions round the same way as the CPU reference.
//
// A row is handled by a "row group" of group_threads threads (one warp for short rows, up
// to 512 threads for long ones); a block holds `groups` row groups working on different
// rows. Thread `lane` of a group holds vectors lane, lane + group_threads, ... of its row in
// registers (vectors_per_thread of them, `width` elements each, 16 bytes when the tensors
// allow), so the row is read from memory once for both the sum of squares and the scale.
// Rows too long for that go to the "wide" kernels, which read the row twice.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <initializer_list>

#include "cuda/common/cuda_common.cuh"
#include "cuda/common/shuffle_reduce.cuh"
#include "cuda/common/vector_io.cuh"
#include "cuda/norm/rmsnorm.cuh"
#include "runtime/dtype.h"

namespace zt::cuda::rmsnorm_detail {

struct Plan {
  bool registers = false;  // false: the wide kernels
  int width = 1;           // elements per access: 16 bytes' worth, or 1
  int vectors_per_thread = 1;
  int group_threads = 32;
  int groups = 1;  // row groups per block
  int block_threads() const { return group_threads * groups; }
};

// 16-byte vectors are used when every one of `pointers` (null ones aside) is 16-byte aligned
// and hidden is a multiple of 16 bytes' worth.
Plan make_plan(DType dtype, std::int64_t hidden, std::initializer_list<const void*> pointers);

// A kernel's arguments: the caller's tensors (Io: RmsNormForwardArgs or RmsNormBackwardArgs)
// and the shape of the work; each direction reads the fields it needs.
template <typename Io>
struct Args {
  Args(const Io& tensors, std::int64_t rows_, std::int64_t hidden_, bool round_normalized_, const Plan& plan)
      : io(tensors),
        rows(rows_),
        hidden(hidden_),
        round_normalized(round_normalized_),
        group_threads(plan.group_threads) {}

  Io io;
  float* partial = nullptr;  // backward: [blocks, hidden] dweight partial sums
  std::int64_t rows = 0;
  std::int64_t hidden = 0;
  std::int64_t rows_per_block = 0;  // backward
  float eps = 0.0f;                 // forward
  bool round_normalized = false;
  int group_threads = 32;
};
using ForwardArgs = Args<RmsNormForwardArgs>;
using BackwardArgs = Args<RmsNormBackwardArgs>;

// A thread's place in its row group.
struct RowGroup {
  int threads, lane, index, count;
};

__device__ __forceinline__ RowGroup row_group(int group_threads) {
  return {group_threads, static_cast<int>(threadIdx.x) % group_threads, static_cast<int>(threadIdx.x) / group_threads,
          static_cast<int>(blockDim.x) / group_threads};
}

// The sum of `value` over each row group, the same bits in every thread of the group. Every
// thread of the block calls it. scratch: 32 shared floats.
__device__ __forceinline__ float group_sum(float value, int group_threads, float* scratch) {
  value = warp_sum(value);
  if (group_threads == 32) return value;
  unsigned warp = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) scratch[warp] = value;
  __syncthreads();
  int warps = group_threads / 32;
  int first = (static_cast<int>(threadIdx.x) / group_threads) * warps;
  float total = 0.0f;
  for (int i = 0; i < warps; ++i) total += scratch[first + i];
  __syncthreads();
  return total;
}

// 1 / sqrt(mean + eps) with correctly rounded steps, as the CPU reference computes it.
__device__ __forceinline__ float inverse_rms(float squares, std::int64_t hidden, float eps) {
  return __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(__fdiv_rn(squares, static_cast<float>(hidden)), eps)));
}

template <typename T>
__device__ __forceinline__ float normalized(float x, float rstd, bool round_normalized) {
  float n = __fmul_rn(x, rstd);
  return round_normalized ? round_through<T>(n) : n;
}

// The row's dx coefficient, dot(g * w, x) * rstd³ / hidden, in the CPU's order.
__device__ __forceinline__ float dx_coefficient(float dot, float rstd, std::int64_t hidden) {
  return __fdiv_rn(__fmul_rn(__fmul_rn(__fmul_rn(dot, rstd), rstd), rstd), static_cast<float>(hidden));
}

// One element of dx, then the gradient the sum received from elsewhere, if any.
template <typename T, bool kGradSum>
__device__ __forceinline__ float grad_input(float g, float w, float x, float rstd, float coefficient, float grad_sum) {
  float dx = __fsub_rn(__fmul_rn(__fmul_rn(rstd, g), w), __fmul_rn(coefficient, x));
  if constexpr (kGradSum)
    return __fadd_rn(round_through<T>(dx), grad_sum);
  else
    return dx;
}

// Calls f.template operator()<W, kVectors>() for a registers plan: W elements of T per
// access (the plan's width), kVectors accesses per thread (the register counts plans use).
template <typename T, typename F>
void dispatch_register_shape(const Plan& plan, F&& f) {
  auto with_width = [&]<int W>() {
    if (plan.vectors_per_thread == 1)
      f.template operator()<W, 1>();
    else if (plan.vectors_per_thread == 4)
      f.template operator()<W, 4>();
    else
      f.template operator()<W, 8>();
  };
  if (plan.width == 1)
    with_width.template operator()<1>();
  else
    with_width.template operator()<kVectorWidth<T>>();
}

}  // namespace zt::cuda::rmsnorm_detail
