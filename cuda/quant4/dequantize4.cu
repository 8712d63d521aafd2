// Dequantizes bitsandbytes' 4-bit weights. The fast path gives each thread 8 packed bytes (16
// values, one 8-byte load) inside one scale block, so the block's scale is decoded once and the
// values leave in 16-byte stores: the kernel runs near the copy rate, where one byte per thread
// with a scale decoded per byte ran at a fifth of it. The code book is copied to shared memory,
// whose 16 entries sit in 16 banks (a warp's lookups never conflict; constant memory would
// serialise them). Tensors whose sizes or alignment do not allow it take the byte-per-thread path.
#include "cuda/quant4/dequantize4.cuh"

#include "cuda/common/cuda_common.cuh"
#include "cuda/elementwise/elementwise_dispatch.cuh"
#include "runtime/check.h"
#include "runtime/error.h"

namespace zt::cuda {
namespace {

constexpr int kThreads = 256;

// bitsandbytes' nf4_dequantization_lut and fp4 table (sign bit 0b1000), as float32.
__constant__ float kNf4[16] = {-1.0f,
                               -0.6961928009986877f,
                               -0.5250730514526367f,
                               -0.39491748809814453f,
                               -0.28444138169288635f,
                               -0.18477343022823334f,
                               -0.09105003625154495f,
                               0.0f,
                               0.07958029955625534f,
                               0.16093020141124725f,
                               0.24611230194568634f,
                               0.33791524171829224f,
                               0.44070982933044434f,
                               0.5626170039176941f,
                               0.7229568362236023f,
                               1.0f};
__constant__ float kFp4[16] = {
    0.0f,  0.0625f / 12.0f,  8.0f / 12.0f,  1.0f,  4.0f / 12.0f,  0.5f,  2.0f / 12.0f,  0.25f,
    -0.0f, -0.0625f / 12.0f, -8.0f / 12.0f, -1.0f, -4.0f / 12.0f, -0.5f, -2.0f / 12.0f, -0.25f};

__device__ __forceinline__ float block_absmax(const Dequantize4Args& a, std::int64_t block) {
  if (a.absmax != nullptr) return a.absmax[block];
  // _rn intrinsics: a fused multiply-add would round once where bitsandbytes rounds twice.
  return __fadd_rn(__fmul_rn(a.nested_map[a.absmax_codes[block]], a.nested_absmax[block / a.nested_blocksize]),
                   a.nested_offset);
}

constexpr int kBytesPerThread = 8;
constexpr int kValuesPerThread = 2 * kBytesPerThread;

template <typename T>
__global__ void __launch_bounds__(kThreads) dequantize_4bit_vector_kernel(Dequantize4Args a) {
  __shared__ float book[16];
  if (threadIdx.x < 16) book[threadIdx.x] = a.nf4 ? kNf4[threadIdx.x] : kFp4[threadIdx.x];
  __syncthreads();
  const std::int64_t groups = a.n / kValuesPerThread;
  T* out = static_cast<T*>(a.out);
  for (std::int64_t g = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x; g < groups;
       g += static_cast<std::int64_t>(gridDim.x) * kThreads) {
    const std::uint64_t codes = reinterpret_cast<const std::uint64_t*>(a.packed)[g];
    const float scale = block_absmax(a, g * kValuesPerThread / a.blocksize);
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
  return a.n % kValuesPerThread == 0 && a.blocksize % kValuesPerThread == 0 &&
         reinterpret_cast<std::uintptr_t>(a.packed) % 8 == 0 && reinterpret_cast<std::uintptr_t>(a.out) % 16 == 0;
}

template <typename T>
__global__ void __launch_bounds__(kThreads) dequantize_4bit_kernel(Dequantize4Args a) {
  const std::int64_t bytes = (a.n + 1) / 2;
  const float* book = a.nf4 ? kNf4 : kFp4;
  T* out = static_cast<T*>(a.out);
  for (std::int64_t byte = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x; byte < bytes;
       byte += static_cast<std::int64_t>(gridDim.x) * kThreads) {
    const std::uint8_t codes = a.packed[byte];
    const std::int64_t first = 2 * byte;
    // A blocksize is even, so both values of a byte share a block.
    const float scale = block_absmax(a, first / a.blocksize);
    store_float(out + first, book[codes >> 4] * scale);
    if (first + 1 < a.n) store_float(out + first + 1, book[codes & 0x0F] * scale);
  }
}

}  // namespace

void dequantize_4bit(const Dequantize4Args& args, cudaStream_t stream) {
  if (args.n == 0) return;
  ZT_REQUIRE(args.blocksize > 0 && args.blocksize % 2 == 0, "dequantize_4bit: the blocksize must be even and positive");
  ZT_REQUIRE(args.absmax != nullptr ||
                 (args.absmax_codes && args.nested_absmax && args.nested_map && args.nested_blocksize > 0),
             "dequantize_4bit: give absmax, or the nested absmax with its codes and map");
  if (vector_path_fits(args)) {
    const unsigned grid = grid_size(args.n / kValuesPerThread, kThreads);
    dispatch_float_type(args.out_dtype, "dequantize_4bit",
                        [&]<typename T>() { dequantize_4bit_vector_kernel<T><<<grid, kThreads, 0, stream>>>(args); });
  } else {
    const unsigned grid = grid_size((args.n + 1) / 2, kThreads);
    dispatch_float_type(args.out_dtype, "dequantize_4bit",
                        [&]<typename T>() { dequantize_4bit_kernel<T><<<grid, kThreads, 0, stream>>>(args); });
  }
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda
