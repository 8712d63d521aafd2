// Vector loads and stores for the bandwidth kernels: N elements of T moved as one access
// of N * sizeof(T) bytes (16 bytes is the widest a thread issues), converted to and from
// float in registers. The host decides whether a pointer may be used this way
// (is_aligned), and falls back to N = 1 where it may not.
#pragma once

#include <cstdint>

#include "cuda/common/cuda_common.cuh"

namespace zt::cuda {

// Elements of T in one 16-byte access.
template <typename T>
inline constexpr int kVectorWidth = static_cast<int>(16 / sizeof(T));

template <typename T, int N>
struct alignas(sizeof(T) * N) Packed {
  T v[N];
};

template <typename T, int N>
__device__ __forceinline__ void load_vector(const T* p, float (&out)[N]) {
  Packed<T, N> packed = *reinterpret_cast<const Packed<T, N>*>(p);
#pragma unroll
  for (int i = 0; i < N; ++i) out[i] = static_cast<float>(packed.v[i]);
}

// The same through the read-only (non-coherent) cache, for inputs the kernel never writes.
template <typename T, int N>
__device__ __forceinline__ void load_vector_ro(const T* p, float (&out)[N]) {
  Packed<T, N> packed;
  if constexpr (sizeof(Packed<T, N>) == 16) {
    uint4 raw = __ldg(reinterpret_cast<const uint4*>(p));
    packed = *reinterpret_cast<Packed<T, N>*>(&raw);
  } else {
    packed = *reinterpret_cast<const Packed<T, N>*>(p);
  }
#pragma unroll
  for (int i = 0; i < N; ++i) out[i] = static_cast<float>(packed.v[i]);
}

template <typename T, int N>
__device__ __forceinline__ void store_vector(T* p, const float (&in)[N]) {
  Packed<T, N> packed;
#pragma unroll
  for (int i = 0; i < N; ++i) store_float(&packed.v[i], in[i]);
  *reinterpret_cast<Packed<T, N>*>(p) = packed;
}

// N consecutive elements as one vector access when kVector (p aligned to N elements), else
// one element at a time: the two paths of a kernel instantiated for both layouts.
template <typename T, int N, bool kVector>
__device__ __forceinline__ void load_elements(const T* p, float (&v)[N]) {
  if constexpr (kVector) {
    load_vector<T, N>(p, v);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = load_float(p + i);
  }
}

template <typename T, int N, bool kVector>
__device__ __forceinline__ void store_elements(T* p, const float (&v)[N]) {
  if constexpr (kVector) {
    store_vector<T, N>(p, v);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) store_float(p + i, v[i]);
  }
}

// Whether p can be accessed `bytes` at a time.
inline bool is_aligned(const void* p, std::size_t bytes) { return reinterpret_cast<std::uintptr_t>(p) % bytes == 0; }

}  // namespace zt::cuda
