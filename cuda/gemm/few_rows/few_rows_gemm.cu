// The few-rows GEMM (few_rows_gemm.cuh): weight tiles streamed through a cp.async pipeline
// into tensor cores.
//
// A block of 4 warps owns kTileN = 64 rows of W (64 columns of y, or 32 columns of gate and
// the 32 matching rows of up) and 16 rows of x (a short batch wastes tensor-core work, which is
// not what limits it; 17 to 32 rows take two blocks per W tile, the second reading W from L2,
// which measured faster than one block of 32 rows). Each warp multiplies 16 of the W rows. It
// walks its share of K in steps of kTileK = 64 through kStages shared-memory buffers: the copies
// of kStages - 1 steps are in flight while the warps multiply one (ldmatrix and mma.sync,
// cuda/common/mma_warp.cuh), so each block keeps 24 KB of weight loads outstanding, and four
// blocks fit an SM (with the shared-memory carveout asked for).
//
// Where the tiles alone are fewer than the SMs hold (a narrow W: q/k/v, the output projection,
// and down_proj with its long K), K is split over the blocks of a thread-block cluster
// (blockIdx.z; code built for sm_90 or newer). Each split leaves its fp32 tile in its own shared memory; after the
// cluster's barrier every block reads the others' tiles through distributed shared memory and
// writes its share of y, each value the splits' sum in split order. No workspace, counter or
// second launch: a graph holds one node per product, and the bits do not depend on which split
// finished first. The epilogue: bias and rounding, SwiGLU, or RoPE with the KV cache write.
#include "cuda/gemm/few_rows/few_rows_gemm.cuh"

#include <cooperative_groups.h>

#include <algorithm>
#include <string>
#include <type_traits>

#include "cuda/common/cuda_common.cuh"
#include "cuda/common/mma_warp.cuh"
#include "cuda/common/multiprocessor_count.h"
#include "cuda/common/programmatic_launch.cuh"
#include "cuda/common/sm90_code.h"
#include "cuda/common/tile_smem.cuh"
#include "cuda/elementwise/elementwise_dispatch.cuh"
#include "cuda/rope/rotate_pair.cuh"
#include "runtime/check.h"
#include "runtime/error.h"

namespace zt::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kTileM = 16;  // rows of x a block multiplies (17 to 32 rows take two blocks)
constexpr int kTileN = 64;
constexpr int kTileK = 64;
constexpr int kStages = 4;
constexpr int kResultPitch = kTileN + 4;  // floats a row of the block's result tile
constexpr int kBlocksPerSm = 4;           // resident: 4 x 40 KB of shared memory, registers capped to fit
constexpr std::int64_t kWantedBlocksPerSm = kBlocksPerSm;
constexpr std::int64_t kMinStepsPerSplit = 3;
constexpr std::int64_t kMaxSplits = 8;           // a portable cluster's blocks
constexpr std::int64_t kMaxColumnTiles = 65535;  // a grid's y

using WeightTile = tile::SmemTile<kTileN, kTileK>;
using XTile = tile::SmemTile<kTileM, kTileK>;

constexpr int kStageBytes = WeightTile::kBytes + XTile::kBytes;
constexpr int kSharedBytes = kStages * kStageBytes;
static_assert(kSharedBytes <= 48 * 1024, "the stages fit the default dynamic shared memory");
constexpr int kResultBytes = kTileM * kResultPitch * 4;
static_assert(kResultBytes <= kSharedBytes, "the result tile reuses the stages");

// Block z of a split K runs steps [z * steps, (z + 1) * steps) of K; count > 1 launches the
// splits of a tile as one cluster.
struct KSplit {
  std::int64_t steps = 0;
  int count = 1;
};

// Columns (or pairs of columns) of y a block writes: 64 of a linear; 32 of SwiGLU (its 64 rows
// of W are 32 of gate and the 32 of up that match them); 32 rotary pairs of RoPE (32 dims of a
// head and the 32 half a head further that they pair with).
template <FewRowsOutput kOutput>
constexpr int kTileColumns = kOutput == FewRowsOutput::kLinear ? kTileN : kTileN / 2;

// Row r of the block's W tile: its row of W, or -1 past W's rows.
template <FewRowsOutput kOutput>
__device__ __forceinline__ std::int64_t weight_row(const FewRowsGemmArgs& a, std::int64_t column_tile, int r) {
  if constexpr (kOutput == FewRowsOutput::kSwiglu) {
    const std::int64_t half = a.out_features / 2, f = column_tile * (kTileN / 2) + r % (kTileN / 2);
    return f < half ? f + (r < kTileN / 2 ? 0 : half) : -1;
  } else if constexpr (kOutput == FewRowsOutput::kRopeQkv) {
    const std::int64_t tiles_per_head = a.rope.head_dim / kTileN, head = column_tile / tiles_per_head;
    const std::int64_t first = (column_tile % tiles_per_head) * (kTileN / 2) + r % (kTileN / 2);
    return head * a.rope.head_dim + first + (r < kTileN / 2 ? 0 : a.rope.head_dim / 2);
  } else {
    const std::int64_t n = column_tile * kTileN + r;
    return n < a.out_features ? n : -1;
  }
}

// One thread's copies into every stage: the same rows and 16-byte column of each step's W and
// x tiles, K advancing by kTileK a step. Worked out once, so a step issues each copy with an
// add: with a few blocks per SM, the instructions that address the copies, not the memory,
// bounded the step when each copy computed its own row, column and swizzled offset.
template <typename T>
struct StageCopies {
  static constexpr int kWeightCopies = kTileN * WeightTile::kChunks / kThreads;
  static constexpr int kXCopies = kTileM * XTile::kChunks / kThreads;
  static_assert(kThreads % WeightTile::kChunks == 0 && kXCopies >= 1, "every thread copies one column of both tiles");

  const T* weight[kWeightCopies];  // the row's first element (W's first where the row lies past W)
  const T* x[kXCopies];
  std::uint32_t weight_offset[kWeightCopies], x_offset[kXCopies];  // within a stage
  bool weight_valid[kWeightCopies], x_valid[kXCopies];
  std::int64_t column;  // this thread's 16-byte column within a step, in elements

  template <FewRowsOutput kOutput>
  __device__ __forceinline__ StageCopies(const FewRowsGemmArgs& a, std::int64_t m0, std::int64_t column_tile,
                                         std::integral_constant<FewRowsOutput, kOutput>) {
    const int chunk = static_cast<int>(threadIdx.x) % WeightTile::kChunks;
    const int row0 = static_cast<int>(threadIdx.x) / WeightTile::kChunks;
    constexpr int kRowStride = kThreads / WeightTile::kChunks;
    column = 8 * chunk;
#pragma unroll
    for (int j = 0; j < kWeightCopies; ++j) {
      const int r = row0 + j * kRowStride;
      const std::int64_t n = weight_row<kOutput>(a, column_tile, r);
      weight_valid[j] = n >= 0;
      weight[j] = static_cast<const T*>(a.weight) + (n >= 0 ? n * a.in_features : 0);
      weight_offset[j] = WeightTile::offset(r, chunk);
    }
#pragma unroll
    for (int j = 0; j < kXCopies; ++j) {
      const int r = row0 + j * kRowStride;
      x_valid[j] = m0 + r < a.rows;
      x[j] = static_cast<const T*>(a.x) + (x_valid[j] ? (m0 + r) * a.x_row_stride : 0);
      x_offset[j] = WeightTile::kBytes + XTile::offset(r, chunk);
    }
  }

  // Issues the copies of step `step` into the stage at shared address `stage`; rows and K past
  // the operands are zeros, which add nothing to a sum (their copies read nothing, from a row's
  // first element, which lies inside the operand). The weight's and x's halves apart: the
  // weight's first steps are issued before the kernel waits for the one that writes x.
  __device__ __forceinline__ void issue_weight(std::uint32_t stage, std::int64_t step, std::int64_t in_features) const {
    const std::int64_t k = step * kTileK + column;
    const bool inside = k < in_features;
#pragma unroll
    for (int j = 0; j < kWeightCopies; ++j)
      tile::cp_async<16>(stage + weight_offset[j], weight[j] + (inside ? k : 0), inside && weight_valid[j]);
  }

  __device__ __forceinline__ void issue_x(std::uint32_t stage, std::int64_t step, std::int64_t in_features) const {
    const std::int64_t k = step * kTileK + column;
    const bool inside = k < in_features;
#pragma unroll
    for (int j = 0; j < kXCopies; ++j)
      tile::cp_async<16>(stage + x_offset[j], x[j] + (inside ? k : 0), inside && x_valid[j]);
  }

  __device__ __forceinline__ void issue(std::uint32_t stage, std::int64_t step, std::int64_t in_features) const {
    issue_weight(stage, step, in_features);
    issue_x(stage, step, in_features);
  }
};

// One rotary pair of row m, dims n_lo and n_lo + head_dim / 2 of W's [q; k; v] heads, rounded
// to T as the product's output is: q's and k's rotated by the row's position, written to y, and
// k's (rotated) and v's also to the row's cache slot, as cuda/rope's cache write stores them.
template <typename T>
__device__ void store_rope_pair(const FewRowsGemmArgs& a, std::int64_t m, std::int64_t n_lo, float lo, float hi) {
  const FewRowsRope& rope = a.rope;
  const std::int64_t half = rope.head_dim / 2, head = n_lo / rope.head_dim, dim = n_lo % rope.head_dim;
  const bool value = head >= rope.q_heads + rope.kv_heads;
  if (!value) {
    float c, s;
    rope_cos_sin<T>(static_cast<float>(rope.positions[m]), rope.inv_freq[dim], false, c, s);
    rope_rotate_pair<T>(lo, hi, c, s);
  }
  T* y = static_cast<T*>(a.y) + m * a.out_features + n_lo;
  store_float(y, lo);
  store_float(y + half, hi);
  if (head < rope.q_heads) return;
  const std::int64_t slot = rope.slots[m];
  if (slot < 0 || slot >= rope.num_slots) return;
  const std::int64_t kv_head = head - rope.q_heads - (value ? rope.kv_heads : 0);
  T* row = static_cast<T*>(value ? rope.value_pool : rope.key_pool) + (slot * rope.kv_heads + kv_head) * rope.head_dim;
  store_float(row + dim, lo);
  store_float(row + dim + half, hi);
}

// y's tile from the fp32 sums: sum(offset) is the tile's value at offset r * kResultPitch + c
// (c over the W tile's rows). This block writes values first_value, first_value + value_step,
// ... of the tile (a split's share; the whole tile without a split).
template <typename T, FewRowsOutput kOutput, typename Sum>
__device__ void write_tile(const FewRowsGemmArgs& a, const Sum& sum_at, std::int64_t m0, std::int64_t column_tile,
                           int first_value, int value_step) {
  constexpr int kColumns = kTileColumns<kOutput>;
  const T* bias = static_cast<const T*>(a.bias);
  T* y = static_cast<T*>(a.y);
  for (int i = first_value; i < kTileM * kColumns; i += value_step) {
    const int r = i / kColumns, c = i % kColumns;
    const std::int64_t m = m0 + r, n = weight_row<kOutput>(a, column_tile, c);
    if (m >= a.rows || n < 0) continue;
    float sum = sum_at(r * kResultPitch + c);
    if (bias != nullptr) sum += load_float(bias + n);
    if constexpr (kOutput == FewRowsOutput::kRopeQkv) {
      float hi = sum_at(r * kResultPitch + c + kColumns);
      if (bias != nullptr) hi += load_float(bias + n + a.rope.head_dim / 2);
      store_rope_pair<T>(a, m, n, round_through<T>(sum), round_through<T>(hi));
    } else if constexpr (kOutput == FewRowsOutput::kSwiglu) {
      const std::int64_t half = a.out_features / 2;
      float up = sum_at(r * kResultPitch + c + kColumns);
      if (bias != nullptr) up += load_float(bias + n + half);
      // gate and up as their GEMM would have stored them, then cuda/swiglu's expression.
      const float gate = round_through<T>(sum), up_value = round_through<T>(up);
      store_float(y + m * half + n, round_through<T>(gate / (1.0f + expf(-gate))) * up_value);
    } else {
      store_float(y + m * a.out_features + n, sum);
    }
  }
}

// The splits' tiles summed in split order: the cluster's blocks each write a share of y from
// the tiles every block left in its shared memory. The second barrier keeps each block's
// tile alive until the others have read it.
template <typename T, FewRowsOutput kOutput>
__device__ void write_split_tile(const FewRowsGemmArgs& a, float* result, std::int64_t m0, std::int64_t column_tile,
                                 int splits) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();
  const float* tiles[kMaxSplits];
#pragma unroll
  for (int z = 0; z < kMaxSplits; ++z) tiles[z] = z < splits ? cluster.map_shared_rank(result, z) : result;
  const auto sum_at = [&](int offset) {
    float sum = 0.0f;
#pragma unroll
    for (int z = 0; z < kMaxSplits; ++z)
      if (z < splits) sum += tiles[z][offset];
    return sum;
  };
  const int rank = static_cast<int>(cluster.block_rank());
  write_tile<T, kOutput>(a, sum_at, m0, column_tile, rank * kThreads + static_cast<int>(threadIdx.x),
                         splits * kThreads);
  cluster.sync();
#else
  __trap();  // the host splits K only where the device runs sm_90 code (runs_sm90_code)
#endif
}

template <typename T, FewRowsOutput kOutput>
__global__ void __launch_bounds__(kThreads, kBlocksPerSm) few_rows_gemm_kernel(FewRowsGemmArgs a, KSplit split) {
  constexpr int kN8 = kTileN / 8 / kWarps;  // 8-row blocks of W per warp; each warp multiplies all 16 rows of x
  static_assert(kTileM == 16 && kN8 % 2 == 0, "the warps split the block's W rows between them");
  extern __shared__ __align__(128) unsigned char shared[];

  const std::int64_t m0 = static_cast<std::int64_t>(blockIdx.x) * kTileM, column_tile = blockIdx.y;
  const std::int64_t first_step = static_cast<std::int64_t>(blockIdx.z) * split.steps;
  const int steps = static_cast<int>(min(first_step + split.steps, (a.in_features + kTileK - 1) / kTileK) - first_step);
  const std::uint32_t stages = mma::smem_address(shared);
  auto stage = [&](int i) { return stages + static_cast<std::uint32_t>((i % kStages) * kStageBytes); };
  const StageCopies<T> copies(a, m0, column_tile, std::integral_constant<FewRowsOutput, kOutput>());
  // Launched after prior (programmatic_launch.cuh): the first steps' weight tiles are on their
  // way while the kernel that writes x finishes. They join the first step's copy group, so
  // step 0 waits for them all, and each later step's group holds its x.
#pragma unroll
  for (int i = 0; i < kStages - 1; ++i)
    if (i < steps) copies.issue_weight(stage(i), first_step + i, a.in_features);
  wait_for_prior_grids();
  allow_next_grid_launch();
#pragma unroll
  for (int i = 0; i < kStages - 1; ++i) {
    if (i < steps) copies.issue_x(stage(i), first_step + i, a.in_features);
    tile::cp_async_commit();
  }
  const int warp = static_cast<int>(threadIdx.x) / 32;
  mma::FragC acc[kN8];
  mma::zero(acc);
  for (int i = 0; i < steps; ++i) {
    tile::cp_async_wait<kStages - 2>();
    // Step i's tiles are complete and visible; every warp is done with step i - 1's buffer,
    // which the copies of step i + kStages - 1 now refill.
    __syncthreads();
    if (i + kStages - 1 < steps) copies.issue(stage(i + kStages - 1), first_step + i + kStages - 1, a.in_features);
    tile::cp_async_commit();
    const std::uint32_t weight_tile = stage(i);
    const std::uint32_t x_tile = weight_tile + WeightTile::kBytes;
    mma::gemm_abt<T, WeightTile, kTileK / 16, kN8>(
        acc, [&](int kk) { return mma::load_a<XTile>(x_tile, 0, kk); }, weight_tile, warp * kN8 * 8);
  }
  tile::cp_async_wait<0>();
  __syncthreads();  // the stages are free for the result tile

  // Accumulator layout (mma.cuh): x[0..1] row group, columns 2 quad, 2 quad + 1; x[2..3] row group + 8.
  float* result = reinterpret_cast<float*>(shared);
  const int lane = static_cast<int>(threadIdx.x) % 32, group = lane / 4, quad = lane % 4;
#pragma unroll
  for (int j = 0; j < kN8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int r = group + 8 * (e / 2), c = warp * kN8 * 8 + 8 * j + 2 * quad + e % 2;
      result[r * kResultPitch + c] = acc[j].x[e];
    }
  if (split.count > 1) {
    write_split_tile<T, kOutput>(a, result, m0, column_tile, split.count);
    return;
  }
  __syncthreads();
  write_tile<T, kOutput>(
      a, [&](int offset) { return result[offset]; }, m0, column_tile, static_cast<int>(threadIdx.x), kThreads);
}

// How many blocks K is split over: the args' count, or enough for kWantedBlocksPerSm where
// the tiles alone are fewer, each split keeping at least kMinStepsPerSplit steps; at most a
// cluster's kMaxSplits, and none without clusters. Alone, 17 to 32 rows ran faster with 4
// splits than 8 (1.5B q/k/v 5.3 against 6.2 µs on an H100), but in a decode graph 8 won
// (2.07 against 2.11 ms a step): with 8 a q/k/v or o block's whole share of W is the three
// steps it loads before waiting for the kernel before it.
std::int64_t k_splits(const FewRowsGemmArgs& a, std::int64_t tiles, std::int64_t steps) {
  if (!runs_sm90_code()) return 1;
  if (a.k_splits > 0) return std::min({static_cast<std::int64_t>(a.k_splits), steps, kMaxSplits});
  const std::int64_t wanted = kWantedBlocksPerSm * multiprocessor_count();
  if (tiles >= wanted) return 1;
  const std::int64_t most = std::clamp<std::int64_t>(steps / kMinStepsPerSplit, 1, kMaxSplits);
  return std::min((wanted + tiles - 1) / tiles, most);
}

template <typename T, FewRowsOutput kOutput>
void launch(const FewRowsGemmArgs& a, cudaStream_t stream) {
  const std::int64_t row_tiles = (a.rows + kTileM - 1) / kTileM;
  const std::int64_t columns = kOutput == FewRowsOutput::kLinear ? a.out_features : a.out_features / 2;
  const std::int64_t column_tiles = (columns + kTileColumns<kOutput> - 1) / kTileColumns<kOutput>;
  ZT_REQUIRE(column_tiles <= kMaxColumnTiles, "few_rows_gemm: " + std::to_string(a.out_features) +
                                                  " weight rows are more column tiles than one grid holds");
  const std::int64_t steps = (a.in_features + kTileK - 1) / kTileK;
  const auto kernel = few_rows_gemm_kernel<T, kOutput>;
  const std::int64_t wanted_splits = k_splits(a, row_tiles * column_tiles, steps);
  KSplit split;
  split.steps = (steps + wanted_splits - 1) / wanted_splits;
  split.count = static_cast<int>((steps + split.steps - 1) / split.steps);  // none of them empty
  const dim3 grid(static_cast<unsigned>(row_tiles), static_cast<unsigned>(column_tiles),
                  static_cast<unsigned>(split.count));
  // Without asking, the SM may keep most of its 228 KB as L1 and hold one block: one block's
  // three steps of loads in flight do not fill the memory system.
  ZT_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = kSharedBytes;
  config.stream = stream;
  cudaLaunchAttribute attributes[2];
  unsigned count = 0;
  if (split.count > 1) {
    attributes[count].id = cudaLaunchAttributeClusterDimension;
    attributes[count].val.clusterDim.x = 1;
    attributes[count].val.clusterDim.y = 1;
    attributes[count].val.clusterDim.z = static_cast<unsigned>(split.count);
    ++count;
  }
  config.attrs = attributes;
  config.numAttrs = add_programmatic_launch(attributes, count);
  ZT_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, a, split));
}

template <typename T>
void launch_for_output(const FewRowsGemmArgs& a, cudaStream_t stream) {
  switch (a.output) {
    case FewRowsOutput::kSwiglu:
      return launch<T, FewRowsOutput::kSwiglu>(a, stream);
    case FewRowsOutput::kRopeQkv:
      return launch<T, FewRowsOutput::kRopeQkv>(a, stream);
    default:
      return launch<T, FewRowsOutput::kLinear>(a, stream);
  }
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// kRopeQkv's heads fill W exactly, in whole 64-row tiles, and everything it reads or writes is
// given.
bool rope_takes(const FewRowsGemmArgs& a) {
  const FewRowsRope& r = a.rope;
  return r.head_dim >= kTileN && r.head_dim <= 256 && r.head_dim % kTileN == 0 && r.q_heads > 0 && r.kv_heads > 0 &&
         (r.q_heads + 2 * r.kv_heads) * r.head_dim == a.out_features && r.positions != nullptr &&
         r.inv_freq != nullptr && r.slots != nullptr && r.key_pool != nullptr && r.value_pool != nullptr &&
         r.num_slots >= 0;
}

bool output_takes(const FewRowsGemmArgs& a) {
  switch (a.output) {
    case FewRowsOutput::kLinear:
      return true;
    case FewRowsOutput::kSwiglu:
      return a.out_features % 2 == 0;
    case FewRowsOutput::kRopeQkv:
      return rope_takes(a);
  }
  return false;
}

}  // namespace

bool few_rows_gemm_takes(const FewRowsGemmArgs& a) {
  const std::int64_t column_tiles = (a.out_features + kTileN - 1) / kTileN;  // the grid's y (SwiGLU's too)
  return (a.dtype == DType::kBF16 || a.dtype == DType::kF16) && a.rows >= 1 && a.rows <= kFewRowsGemmMaxRows &&
         column_tiles <= kMaxColumnTiles && a.in_features > 0 && a.in_features % 8 == 0 && a.x_row_stride % 8 == 0 &&
         a.x_row_stride >= a.in_features && a.out_features > 0 && output_takes(a) && aligned16(a.x) &&
         aligned16(a.weight) && aligned16(a.y);
}

void few_rows_gemm(const FewRowsGemmArgs& args, cudaStream_t stream) {
  ZT_REQUIRE(args.x != nullptr && args.weight != nullptr && args.y != nullptr,
             "few_rows_gemm: x, weight and y must be given");
  ZT_REQUIRE(few_rows_gemm_takes(args),
             "few_rows_gemm: " + std::to_string(args.rows) + " rows of " + dtype_name(args.dtype) + " x " +
                 std::to_string(args.in_features) + " (row stride " + std::to_string(args.x_row_stride) + ") by " +
                 std::to_string(args.out_features) + " weight rows is not a product it takes: 16-bit, 1 to " +
                 std::to_string(kFewRowsGemmMaxRows) +
                 " rows, K and the row stride multiples of 8, pointers 16-byte aligned; for RoPE, heads of 64 to 256 "
                 "dims in steps of 64 that make the weight's rows, with positions, frequencies, slots and pools given "
                 "(use cuBLASLt)");
  ZT_REQUIRE(args.k_splits >= 0, "few_rows_gemm: k_splits must be 0 (chosen) or a positive count");
  dispatch_float_type<GpuHalfTypes>(args.dtype, "few_rows_gemm",
                                    [&]<typename T>() { launch_for_output<T>(args, stream); });
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda
