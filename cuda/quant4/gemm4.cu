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
// A weight with few column tiles (q_proj's 3584 columns make 56 for 132 SMs; down_proj's also
// walk a K of 18944) would leave most SMs idle, so K is split over blocks (blockIdx.z): each
// writes its tile's fp32 partial sums to a workspace and a second kernel adds them in split
// order, adds the bias and rounds y. The order is fixed by the shape and the GPU, so results
// keep their bits run to run.
//
// Shapes the 16-byte path cannot take (K not a multiple of 32, scale blocks not of a multiple
// of 32 values, codes or x not 16-byte aligned) decode the weight tile one value per thread
// and load x one element at a time, into the same tiles: the same arithmetic, slower.
// Out-of-range rows, columns and K are zeros in both tiles, so they add nothing to a sum.
#include "cuda/quant4/gemm4.cuh"

#include <algorithm>
#include <string>
#include <type_traits>

#include "cuda/common/cuda_common.cuh"
#include "cuda/common/mma_warp.cuh"
#include "cuda/common/multiprocessor_count.h"
#include "cuda/common/scratch_buffer.h"
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
constexpr int kAhead = 2;                // steps between a chunk's load and its decode
constexpr int kResidentBlocksPerSm = 4;  // what the registers and shared memory of the widest tile allow
constexpr std::int64_t kMinStepsPerSplit = 8;
constexpr std::int64_t kMaxSplits = 16;
constexpr int kReduceThreads = 256;

using WeightTile = tile::SmemTile<kTileN, kTileK>;
template <int kTileM>
using XTile = tile::SmemTile<kTileM, kTileK>;

static_assert(kTileN * kChunksPerRow == kThreads, "each thread decodes one chunk of codes per step");

// Block z of a split K runs steps [z * steps, (z + 1) * steps) and writes its fp32 sums to
// partial[z] ([rows, N] each); with one split partial is null and the block writes y.
struct KSplit {
  std::int64_t steps = 0;
  float* partial = nullptr;
};

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
__global__ void __launch_bounds__(kThreads) gemm_4bit_kernel(Gemm4Args a, KSplit split) {
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
  const std::int64_t first_step = static_cast<std::int64_t>(blockIdx.z) * split.steps;
  const std::int64_t end_step = min(first_step + split.steps, (a.in_features + kTileK - 1) / kTileK);
  CodeChunk ahead[kAhead];
  if constexpr (kWide) {
    const int row = static_cast<int>(threadIdx.x) / kChunksPerRow, part = static_cast<int>(threadIdx.x) % kChunksPerRow;
#pragma unroll
    for (int i = 0; i < kAhead; ++i)
      ahead[i] = load_chunk(a, n0 + row, (first_step + i) * kTileK + part * kChunkValues);
  }
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int warp_m = warp % kWarpsM, warp_n = warp / kWarpsM;
  mma::FragC acc[kN8];
  mma::zero(acc);
  fill_step<T, W, kTileM, kWide>(a, s, ahead, first_step, 0, m0, n0);
  for (std::int64_t step = first_step; step < end_step; ++step) {
    const int buffer = static_cast<int>((step - first_step) % 2);
    if constexpr (kWide) tile::cp_async_wait<0>();
    // The step's tiles are complete and visible; every warp is done with the other buffer.
    __syncthreads();
    if (step + 1 < end_step) fill_step<T, W, kTileM, kWide>(a, s, ahead, step + 1, buffer ^ 1, m0, n0);
    const std::uint32_t x_tile = mma::smem_address(s.x[buffer]);
    mma::gemm_abt<T, WeightTile, kTileK / 16, kN8>(
        acc, [&](int kk) { return mma::load_a<XTile<kTileM>>(x_tile, warp_m * 16, kk); },
        mma::smem_address(s.weight[buffer]), warp_n * kN8 * 8);
  }

  // Accumulator layout (mma.cuh): x[0..1] row group, columns 2 quad, 2 quad + 1; x[2..3] row group + 8.
  const int lane = static_cast<int>(threadIdx.x) % 32, group = lane / 4, quad = lane % 4;
  T* y = static_cast<T*>(a.y);
  const T* bias = static_cast<const T*>(a.bias);
  float* partial = split.partial == nullptr
                       ? nullptr
                       : split.partial + static_cast<std::int64_t>(blockIdx.z) * a.rows * a.out_features;
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
        if (partial != nullptr) {
          partial[m * a.out_features + n] = sum;
        } else {
          if (bias != nullptr) sum += load_float(bias + n);
          store_float(y + m * a.out_features + n, sum);
        }
      }
    }
}

// y = the splits' partial sums added in split order (+ bias), rounded to T.
template <typename T>
__global__ void __launch_bounds__(kReduceThreads) add_splits_kernel(Gemm4Args a, const float* partial, int splits) {
  const std::int64_t outputs = a.rows * a.out_features;
  T* y = static_cast<T*>(a.y);
  const T* bias = static_cast<const T*>(a.bias);
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * kReduceThreads + threadIdx.x; i < outputs;
       i += static_cast<std::int64_t>(gridDim.x) * kReduceThreads) {
    float sum = partial[i];
    for (int z = 1; z < splits; ++z) sum += partial[z * outputs + i];
    if (bias != nullptr) sum += load_float(bias + i % a.out_features);
    store_float(y + i, sum);
  }
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

bool wide_path_fits(const Gemm4Args& a) {
  return a.in_features % kChunkValues == 0 && a.weight.blocksize % kChunkValues == 0 && aligned16(a.weight.packed) &&
         aligned16(a.x);
}

// How many blocks K is split over: the args' count, or enough for the GPU's resident blocks
// where the tiles alone are fewer, each split keeping at least kMinStepsPerSplit steps.
std::int64_t k_splits(const Gemm4Args& a, std::int64_t tiles, std::int64_t steps) {
  if (a.k_splits > 0) return std::min<std::int64_t>(a.k_splits, steps);
  const std::int64_t wanted = static_cast<std::int64_t>(kResidentBlocksPerSm) * multiprocessor_count();
  if (tiles >= wanted) return 1;
  const std::int64_t most = std::clamp<std::int64_t>(steps / kMinStepsPerSplit, 1, kMaxSplits);
  return std::min((wanted + tiles - 1) / tiles, most);
}

template <typename T, typename W, int kTileM, bool kWide>
void launch_tiles(const Gemm4Args& a, cudaStream_t stream) {
  const std::int64_t row_tiles = (a.rows + kTileM - 1) / kTileM;
  const std::int64_t column_tiles = (a.out_features + kTileN - 1) / kTileN;
  ZT_REQUIRE(row_tiles <= 0x7FFFFFFF && column_tiles <= 65535, "gemm_4bit: " + std::to_string(a.rows) + " x " +
                                                                   std::to_string(a.out_features) +
                                                                   " outputs are more tiles than one grid holds");
  const std::int64_t steps = (a.in_features + kTileK - 1) / kTileK;
  const std::int64_t wanted_splits = k_splits(a, row_tiles * column_tiles, steps);
  KSplit split;
  split.steps = (steps + wanted_splits - 1) / wanted_splits;
  const auto splits = static_cast<int>((steps + split.steps - 1) / split.steps);  // none of them empty
  const dim3 grid(static_cast<unsigned>(row_tiles), static_cast<unsigned>(column_tiles), static_cast<unsigned>(splits));
  if (splits == 1) {
    gemm_4bit_kernel<T, W, kTileM, kWide><<<grid, kThreads, 0, stream>>>(a, split);
    return;
  }
  const std::int64_t outputs = a.rows * a.out_features;
  ScratchBuffer partial(static_cast<std::size_t>(splits * outputs) * sizeof(float), stream);
  split.partial = partial.as<float>();
  gemm_4bit_kernel<T, W, kTileM, kWide><<<grid, kThreads, 0, stream>>>(a, split);
  add_splits_kernel<T><<<grid_size(outputs, kReduceThreads), kReduceThreads, 0, stream>>>(a, split.partial, splits);
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
  require_packed4_matrix(args.weight, args.in_features, args.out_features, "gemm_4bit");
  ZT_REQUIRE(args.x != nullptr && args.y != nullptr, "gemm_4bit: x and y must be given");
  ZT_REQUIRE(args.k_splits >= 0, "gemm_4bit: k_splits must be 0 (chosen) or a positive count");
  if (args.dtype == DType::kBF16)
    launch_for_weight_dtype<__nv_bfloat16>(args, stream);
  else
    launch_for_weight_dtype<__half>(args, stream);
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda
