// The 4-bit GEMM: dequantize-to-shared-memory feeding the tensor cores. Where
// dequantize-then-GEMM writes the whole bfloat16 weight and reads it back (4 bytes per weight
// beyond the half byte of codes), this kernel reads the codes once per tile of rows and
// decodes them on the way into shared memory.
//
// A block of 4 warps owns a tile of kTileN columns of y (rows of W) and kTileM rows of x (16,
// 32 or 64: the fewest that cover the rows, so a short batch wastes little of the tensor
// cores' work; more rows take a grid of such tiles, whose blocks over the same columns run
// side by side and so share the codes through L2). It walks K in steps of kTileK. Each step,
// every thread decodes one 16-byte load of 32 codes of one row of W, inside one scale block,
// so the scale is decoded once per 32 values, into the step's weight tile, each value rounded
// exactly as dequantize_4bit and the conversion to x's dtype round it (packed4_decode.cuh).
// x's tile arrives by cp.async. Weight and x tiles are double-buffered, so one barrier per
// step separates the tiles being filled from those being multiplied; the codes are loaded
// kAhead steps before they are decoded, keeping the loads of the next steps in flight while a
// step decodes and multiplies. The warps multiply the tiles with ldmatrix and
// mma.sync.m16n8k16 (cuda/common/mma_warp.cuh), fp32 accumulators; the bias joins the fp32
// sums before y is rounded.
//
// Shapes the 16-byte path cannot take (K not a multiple of 32, scale blocks not of a multiple
// of 32 values, codes or x not 16-byte aligned) decode the weight tile one value per thread
// and load x one element at a time, into the same tiles: the same arithmetic, slower.
// Out-of-range rows, columns and K are zeros in both tiles, so they add nothing to a sum.
#include "cuda/quant4/gemm4.cuh"

#include <string>
#include <type_traits>

#include "cuda/common/cuda_common.cuh"
#include "cuda/common/mma_warp.cuh"
#include "cuda/common/tile_smem.cuh"
#include "cuda/elementwise/elementwise_dispatch.cuh"
#include "cuda/quant4/packed4_decode.cuh"
#include "runtime/check.h"
#include "runtime/error.h"

namespace zt::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kTileN = 64;
constexpr int kTileK = 64;
constexpr int kChunkValues = 32;  // one thread's 16 bytes of codes per step
constexpr int kChunksPerRow = kTileK / kChunkValues;
constexpr int kAhead = 2;  // steps between a chunk's load and its decode

using WeightTile = tile::SmemTile<kTileN, kTileK>;
template <int kTileM>
using XTile = tile::SmemTile<kTileM, kTileK>;

static_assert(kTileN * kChunksPerRow == kThreads, "each thread decodes one chunk of codes per step");

template <int kTileM>
struct SharedTiles {
  alignas(128) unsigned char weight[2][WeightTile::kBytes];
  alignas(128) unsigned char x[2][XTile<kTileM>::kBytes];
  float book[16];
  float nested_map[256];
};

// One thread's share of a step's weight tile: 32 codes of one row of W, what their scale is
// made of, and whether they lie inside W at all.
struct CodeChunk {
  uint4 codes{};
  ScaleParts scale{};
  bool valid = false;
};

// The chunk of row n of W from value k on (k a multiple of 32).
__device__ __forceinline__ CodeChunk load_chunk(const Gemm4Args& a, std::int64_t n, std::int64_t k) {
  CodeChunk c;
  c.valid = n < a.out_features && k < a.in_features;
  if (c.valid) {
    const std::int64_t first = n * a.in_features + k;
    c.codes = __ldg(reinterpret_cast<const uint4*>(a.weight.packed + first / 2));
    c.scale = load_scale_parts(a.weight, first / a.weight.blocksize);
  }
  return c;
}

// A chunk's 32 values, rounded through W to T, as 4 rows of 8 T into the weight tile at
// (row, 16-byte column chunk0 ..): a byte's high code first, the lower k in the lower half.
template <typename T, typename W>
__device__ __forceinline__ void decode_chunk(const Packed4Weight& w, const float* book, const float* nested_map,
                                             const CodeChunk& c, unsigned char* tile, int row, int chunk0) {
  const float scale = c.valid ? decode_scale(w, c.scale, nested_map) : 0.0f;
#pragma unroll
  for (int word = 0; word < 4; ++word) {
    const unsigned codes = (&c.codes.x)[word];
    std::uint32_t pairs[4];
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      const unsigned byte = (codes >> (8 * b)) & 0xFFu;
      float first = __fmul_rn(book[byte >> 4], scale);
      float second = __fmul_rn(book[byte & 0x0Fu], scale);
      if constexpr (!std::is_same_v<W, T> && !std::is_same_v<W, float>) round_pair<W>(first, second);
      pairs[b] = c.valid ? mma::pack<T>(first, second) : 0u;
    }
    *reinterpret_cast<uint4*>(tile + WeightTile::offset(row, chunk0 + word)) =
        make_uint4(pairs[0], pairs[1], pairs[2], pairs[3]);
  }
}

// The weight tile of columns n0.. and values k0.., one value per thread at a time (any shape).
template <typename T, typename W>
__device__ void decode_weight_tile_any(const Gemm4Args& a, const float* book, const float* nested_map, std::int64_t n0,
                                       std::int64_t k0, unsigned char* tile) {
  const Packed4Weight& w = a.weight;
  for (int i = static_cast<int>(threadIdx.x); i < kTileN * kTileK; i += kThreads) {
    const int r = i / kTileK, c = i % kTileK;
    const std::int64_t n = n0 + r, k = k0 + c;
    float value = 0.0f;
    if (n < a.out_features && k < a.in_features) {
      const std::int64_t flat = n * a.in_features + k;
      const unsigned byte = w.packed[flat / 2];
      const unsigned code = flat % 2 == 0 ? byte >> 4 : byte & 0x0Fu;
      value = weight_value<T, W>(book, code, decode_scale(w, load_scale_parts(w, flat / w.blocksize), nested_map));
    }
    store_float(reinterpret_cast<T*>(tile + WeightTile::element_offset(r, c)), value);
  }
}

// x's tile of rows m0.. and values k0.. by cp.async, 16 bytes a copy (K a multiple of 8, x
// 16-byte aligned); outside x, zeros.
template <typename T, int kTileM>
__device__ __forceinline__ void load_x_tile_async(const Gemm4Args& a, std::int64_t m0, std::int64_t k0,
                                                  unsigned char* tile) {
  using Tile = XTile<kTileM>;
  const T* x = static_cast<const T*>(a.x);
  for (int i = static_cast<int>(threadIdx.x); i < kTileM * Tile::kChunks; i += kThreads) {
    const int r = i / Tile::kChunks, c = i % Tile::kChunks;
    const std::int64_t m = m0 + r, k = k0 + 8 * c;
    const bool valid = m < a.rows && k < a.in_features;
    tile::cp_async<16>(mma::smem_address(tile + Tile::offset(r, c)), valid ? x + m * a.in_features + k : x, valid);
  }
  tile::cp_async_commit();
}

// The same one element at a time (any shape).
template <typename T, int kTileM>
__device__ void load_x_tile_any(const Gemm4Args& a, std::int64_t m0, std::int64_t k0, unsigned char* tile) {
  const T* x = static_cast<const T*>(a.x);
  for (int i = static_cast<int>(threadIdx.x); i < kTileM * kTileK; i += kThreads) {
    const int r = i / kTileK, c = i % kTileK;
    const std::int64_t m = m0 + r, k = k0 + c;
    const float value = m < a.rows && k < a.in_features ? load_float(x + m * a.in_features + k) : 0.0f;
    store_float(reinterpret_cast<T*>(tile + XTile<kTileM>::element_offset(r, c)), value);
  }
}

// Fills buffer `buffer` with step `step`'s tiles: x's copies issued, the weight decoded. On
// the 16-byte path the decoded chunk was loaded kAhead steps ago; the chunk kAhead steps on is
// loaded in its place.
template <typename T, typename W, int kTileM, bool kWide>
__device__ __forceinline__ void fill_step(const Gemm4Args& a, SharedTiles<kTileM>& s, CodeChunk (&ahead)[kAhead],
                                          std::int64_t step, int buffer, std::int64_t m0, std::int64_t n0) {
  const std::int64_t k0 = step * kTileK;
  if constexpr (kWide) {
    load_x_tile_async<T, kTileM>(a, m0, k0, s.x[buffer]);
    const int row = static_cast<int>(threadIdx.x) / kChunksPerRow, part = static_cast<int>(threadIdx.x) % kChunksPerRow;
    const CodeChunk current = ahead[0];
#pragma unroll
    for (int i = 0; i + 1 < kAhead; ++i) ahead[i] = ahead[i + 1];
    ahead[kAhead - 1] = load_chunk(a, n0 + row, k0 + kAhead * kTileK + part * kChunkValues);
    decode_chunk<T, W>(a.weight, s.book, s.nested_map, current, s.weight[buffer], row, part * kChunkValues / 8);
  } else {
    load_x_tile_any<T, kTileM>(a, m0, k0, s.x[buffer]);
    decode_weight_tile_any<T, W>(a, s.book, s.nested_map, n0, k0, s.weight[buffer]);
  }
}

template <typename T, typename W, int kTileM, bool kWide>
__global__ void __launch_bounds__(kThreads) gemm_4bit_kernel(Gemm4Args a) {
  constexpr int kWarpsM = kTileM / 16, kWarpsN = kWarps / kWarpsM;
  constexpr int kN8 = kTileN / 8 / kWarpsN;  // 8-column blocks of y per warp
  static_assert(kWarpsM * kWarpsN == kWarps && kN8 % 2 == 0, "the warps tile the block's rows and columns");
  __shared__ SharedTiles<kTileM> s;
  if (threadIdx.x < 16) s.book[threadIdx.x] = code_book(a.weight)[threadIdx.x];
  if (a.weight.absmax == nullptr)
    for (int i = static_cast<int>(threadIdx.x); i < 256; i += kThreads) s.nested_map[i] = a.weight.nested_map[i];
  __syncthreads();

  const std::int64_t m0 = static_cast<std::int64_t>(blockIdx.x) * kTileM;
  const std::int64_t n0 = static_cast<std::int64_t>(blockIdx.y) * kTileN;
  const std::int64_t steps = (a.in_features + kTileK - 1) / kTileK;
  CodeChunk ahead[kAhead];
  if constexpr (kWide) {
    const int row = static_cast<int>(threadIdx.x) / kChunksPerRow, part = static_cast<int>(threadIdx.x) % kChunksPerRow;
#pragma unroll
    for (int i = 0; i < kAhead; ++i) ahead[i] = load_chunk(a, n0 + row, i * kTileK + part * kChunkValues);
  }
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int warp_m = warp % kWarpsM, warp_n = warp / kWarpsM;
  mma::FragC acc[kN8];
  mma::zero(acc);
  fill_step<T, W, kTileM, kWide>(a, s, ahead, 0, 0, m0, n0);
  for (std::int64_t step = 0; step < steps; ++step) {
    const int buffer = static_cast<int>(step % 2);
    if constexpr (kWide) tile::cp_async_wait<0>();
    // The step's tiles are complete and visible; every warp is done with the other buffer.
    __syncthreads();
    if (step + 1 < steps) fill_step<T, W, kTileM, kWide>(a, s, ahead, step + 1, buffer ^ 1, m0, n0);
    const std::uint32_t x_tile = mma::smem_address(s.x[buffer]);
    mma::gemm_abt<T, WeightTile, kTileK / 16, kN8>(
        acc, [&](int kk) { return mma::load_a<XTile<kTileM>>(x_tile, warp_m * 16, kk); },
        mma::smem_address(s.weight[buffer]), warp_n * kN8 * 8);
  }

  // Accumulator layout (mma.cuh): x[0..1] row group, columns 2 quad, 2 quad + 1; x[2..3] row group + 8.
  const int lane = static_cast<int>(threadIdx.x) % 32, group = lane / 4, quad = lane % 4;
  T* y = static_cast<T*>(a.y);
  const T* bias = static_cast<const T*>(a.bias);
#pragma unroll
  for (int j = 0; j < kN8; ++j)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const std::int64_t n = n0 + warp_n * kN8 * 8 + 8 * j + 2 * quad + e;
      if (n >= a.out_features) continue;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const std::int64_t m = m0 + warp_m * 16 + group + 8 * half;
        if (m >= a.rows) continue;
        float sum = acc[j].x[2 * half + e];
        if (bias != nullptr) sum += load_float(bias + n);
        store_float(y + m * a.out_features + n, sum);
      }
    }
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

bool wide_path_fits(const Gemm4Args& a) {
  return a.in_features % kChunkValues == 0 && a.weight.blocksize % kChunkValues == 0 && aligned16(a.weight.packed) &&
         aligned16(a.x);
}

template <typename T, typename W, int kTileM, bool kWide>
void launch_tiles(const Gemm4Args& a, cudaStream_t stream) {
  const std::int64_t row_tiles = (a.rows + kTileM - 1) / kTileM;
  const std::int64_t column_tiles = (a.out_features + kTileN - 1) / kTileN;
  ZT_REQUIRE(row_tiles <= 0x7FFFFFFF && column_tiles <= 65535, "gemm_4bit: " + std::to_string(a.rows) + " x " +
                                                                   std::to_string(a.out_features) +
                                                                   " outputs are more tiles than one grid holds");
  const dim3 grid(static_cast<unsigned>(row_tiles), static_cast<unsigned>(column_tiles));
  gemm_4bit_kernel<T, W, kTileM, kWide><<<grid, kThreads, 0, stream>>>(a);
}

template <typename T, typename W>
void launch(const Gemm4Args& a, cudaStream_t stream) {
  if (!wide_path_fits(a))
    launch_tiles<T, W, 64, false>(a, stream);
  else if (a.rows <= 16)
    launch_tiles<T, W, 16, true>(a, stream);
  else if (a.rows <= 32)
    launch_tiles<T, W, 32, true>(a, stream);
  else
    launch_tiles<T, W, 64, true>(a, stream);
}

template <typename T>
void launch_for_weight_dtype(const Gemm4Args& a, cudaStream_t stream) {
  dispatch_float_type(a.weight_dtype, "gemm_4bit (weight dtype)", [&]<typename W>() { launch<T, W>(a, stream); });
}

}  // namespace

void gemm_4bit(const Gemm4Args& args, cudaStream_t stream) {
  if (args.rows == 0 || args.out_features == 0) return;
  ZT_REQUIRE(gemm_4bit_takes(args.dtype), std::string("gemm_4bit: x is ") + dtype_name(args.dtype) +
                                              "; the kernel takes bfloat16 or float16 (dequantize for float32)");
  ZT_REQUIRE(args.rows > 0, "gemm_4bit: " + std::to_string(args.rows) + " rows");
  ZT_REQUIRE(args.in_features > 0 && args.weight.n == args.in_features * args.out_features,
             "gemm_4bit: the 4-bit weight holds " + std::to_string(args.weight.n) + " values, not " +
                 std::to_string(args.out_features) + " x " + std::to_string(args.in_features));
  ZT_REQUIRE(args.weight.blocksize > 0 && args.weight.blocksize % 2 == 0,
             "gemm_4bit: the blocksize must be even and positive");
  ZT_REQUIRE(args.weight.has_scales(), "gemm_4bit: give absmax, or the nested absmax with its codes and map");
  ZT_REQUIRE(args.x != nullptr && args.y != nullptr, "gemm_4bit: x and y must be given");
  if (args.dtype == DType::kBF16)
    launch_for_weight_dtype<__nv_bfloat16>(args, stream);
  else
    launch_for_weight_dtype<__half>(args, stream);
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda
