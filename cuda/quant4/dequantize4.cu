// Dequantizes bitsandbytes' 4-bit weights. The fast path gives each thread 8 packed bytes (16
// values, one 8-byte load) inside one scale block, so the block's scale is decoded once and the
// values leave in 16-byte stores: the kernel runs near the copy rate, where one byte per thread
// with a scale decoded per byte ran at a fifth of it. The code book is copied to shared memory,
// whose 16 entries sit in 16 banks (a warp's lookups never conflict; constant memory would
// serialise them); the books and the scale decoding are packed4_decode.cuh's, which the 4-bit
// GEMV shares. Tensors whose sizes or alignment do not allow it take the byte-per-thread path.
#include "cuda/quant4/dequantize4.cuh"

#include "cuda/common/cuda_common.cuh"
#include "cuda/elementwise/elementwise_dispatch.cuh"
#include "cuda/quant4/packed4_decode.cuh"
#include "runtime/check.h"
#include "runtime/error.h"

namespace zt::cuda {
namespace {

constexpr int kThreads = 256;

constexpr int kBytesPerThread = 8;
constexpr int kValuesPerThread = 2 * kBytesPerThread;

template <typename T>
__global__ void __launch_bounds__(kThreads) dequantize_4bit_vector_kernel(Dequantize4Args a) {
  const Packed4Weight& w = a.weight;
  __shared__ float book[16];
  if (threadIdx.x < 16) book[threadIdx.x] = code_book(w)[threadIdx.x];
  __syncthreads();
  const std::int64_t groups = w.n / kValuesPerThread;
  T* out = static_cast<T*>(a.out);
  for (std::int64_t g = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x; g < groups;
       g += static_cast<std::int64_t>(gridDim.x) * kThreads) {
    const std::uint64_t codes = reinterpret_cast<const std::uint64_t*>(w.packed)[g];
    const float scale = block_absmax(w, g * kValuesPerThread / w.blocksize);
    alignas(16) T values[kValuesPerThread];
#pragma unroll
    for (int b = 0; b < kBytesPerThread; ++b) {
      const unsigned byte = static_cast<unsigned>(codes >> (8 * b)) & 0xFFu;
      store_float(&values[2 * b], book[byte >> 4] * scale);
      store_float(&values[2 * b + 1], book[byte & 0x0F] * scale);
    }
    uint4* dst = reinterpret_cast<uint4*>(out + g * kValuesPerThread);
    const uint4* src = reinterpret_cast<const uint4*>(values);
#pragma unroll
    for (int v = 0; v < static_cast<int>(sizeof(values) / sizeof(uint4)); ++v) dst[v] = src[v];
  }
}

// Sizes and addresses the vector path can take: whole 16-value groups inside a scale block,
// the packed bytes 8-aligned and the output 16-aligned.
bool vector_path_fits(const Dequantize4Args& a) {
  const Packed4Weight& w = a.weight;
  return w.n % kValuesPerThread == 0 && w.blocksize % kValuesPerThread == 0 &&
         reinterpret_cast<std::uintptr_t>(w.packed) % 8 == 0 && reinterpret_cast<std::uintptr_t>(a.out) % 16 == 0;
}

template <typename T>
__global__ void __launch_bounds__(kThreads) dequantize_4bit_kernel(Dequantize4Args a) {
  const Packed4Weight& w = a.weight;
  const std::int64_t bytes = (w.n + 1) / 2;
  const float* book = code_book(w);
  T* out = static_cast<T*>(a.out);
  for (std::int64_t byte = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x; byte < bytes;
       byte += static_cast<std::int64_t>(gridDim.x) * kThreads) {
    const std::uint8_t codes = w.packed[byte];
    const std::int64_t first = 2 * byte;
    // A blocksize is even, so both values of a byte share a block.
    const float scale = block_absmax(w, first / w.blocksize);
    store_float(out + first, book[codes >> 4] * scale);
    if (first + 1 < w.n) store_float(out + first + 1, book[codes & 0x0F] * scale);
  }
}

}  // namespace

void dequantize_4bit(const Dequantize4Args& args, cudaStream_t stream) {
  const Packed4Weight& w = args.weight;
  if (w.n == 0) return;
  require_packed4_scales(w, "dequantize_4bit");
  if (vector_path_fits(args)) {
    const unsigned grid = grid_size(w.n / kValuesPerThread, kThreads);
    dispatch_float_type(args.out_dtype, "dequantize_4bit",
                        [&]<typename T>() { dequantize_4bit_vector_kernel<T><<<grid, kThreads, 0, stream>>>(args); });
  } else {
    const unsigned grid = grid_size((w.n + 1) / 2, kThreads);
    dispatch_float_type(args.out_dtype, "dequantize_4bit",
                        [&]<typename T>() { dequantize_4bit_kernel<T><<<grid, kThreads, 0, stream>>>(args); });
  }
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda
