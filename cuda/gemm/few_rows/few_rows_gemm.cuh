// A linear layer of a few activation rows (a batched decode step: 1 to kFewRowsGemmMaxRows
// rows) on tensor cores, shaped to stream the weight at the memory's rate:
//   y[m, n] = sum_k x[m, k] * W[n, k]  (+ bias[n])
// At these rows each weight value serves a handful of products, so the time is the weight's
// bytes; cuBLASLt's kernels for them reach 0.9–1.6 TB/s on an H100 (docs/PERF.md, decode
// fourth pass), and a narrow weight with a long K needs its split-K reduction as a second
// launch. This kernel keeps several 8 KB weight tiles in flight per block and, on Hopper,
// splits K over the blocks of a cluster where the tiles alone would leave SMs idle; the
// cluster adds the splits' fp32 partial sums through distributed shared memory, in split
// order, in the same launch.
//
// FewRowsOutput::kSwiglu reads W as [gate; up] (the joined gate/up allocation of a decoder
// layer, or GLM's fused gate_up_proj) and writes silu(gate) * up: each block multiplies
// matching rows of both halves, so SwiGLU is the GEMM's epilogue and the [rows, 2F] product is
// never stored. gate and up are each rounded to the dtype first, as the separate GEMM rounds
// its output, and the product as cuda/swiglu rounds it: the same bits as GEMM then SwiGLU
// whenever the sums agree.
//
// FewRowsOutput::kRopeQkv reads W as a layer's joined [q; k; v] heads (head_dim a multiple of
// 64, the rotary dims the whole head, rotate-half pairs as Qwen's) and ends as the paged
// cache's RoPE + KV write does (cuda/rope/rope.cuh with a RopeCacheWrite): q's and k's heads
// rotated by each row's position, k's and v's heads also stored at the row's cache slot. Each
// block's 64 weight rows are 32 dims of a head and the 32 they pair with, so both halves of a
// pair are in one block; y is the rotated [rows, N] the attention reads q from. The same bits
// as the linear product then the RoPE kernel: the sums are the same, the rotation is
// cuda/rope/rotate_pair.cuh's.
//
// fp32 sums of the dtype's products; the bias joins the fp32 sum before rounding, as
// cuBLASLt's bias epilogue does. The result is cuBLASLt's up to the order of the sum; the split
// count, and so the order, is fixed by the shape and the GPU, so results keep their bits run
// to run.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/dtype.h"

namespace zt::cuda {

// The most rows the kernel takes; more rows are cuBLASLt's (each weight value then serves
// enough products that the GEMM is no longer the weight's bytes).
inline constexpr std::int64_t kFewRowsGemmMaxRows = 32;

enum class FewRowsOutput {
  kLinear,   // y [rows, N]
  kSwiglu,   // W = [gate; up] of N = 2F rows (bias likewise); y [rows, F] = silu(gate) * up
  kRopeQkv,  // W = [q; k; v] heads (FewRowsRope); y [rows, N] with q and k rotated, k and v cached
};

// kRopeQkv's heads, rotation and cache: N = (q_heads + 2 kv_heads) * head_dim.
struct FewRowsRope {
  std::int64_t head_dim = 0;  // a multiple of 64, at most 256; every dim rotates
  std::int64_t q_heads = 0;
  std::int64_t kv_heads = 0;
  const std::int64_t* positions = nullptr;  // device [rows]
  const float* inv_freq = nullptr;          // device [head_dim / 2], as cuda/rope's RopeFrequencies
  const std::int64_t* slots = nullptr;      // device [rows]: the cache row; negative or >= num_slots skips
  void* key_pool = nullptr;                 // [num_slots, kv_heads, head_dim] of dtype
  void* value_pool = nullptr;
  std::int64_t num_slots = 0;
};

struct FewRowsGemmArgs {
  std::int64_t rows = 0;          // M, 1 to kFewRowsGemmMaxRows
  std::int64_t in_features = 0;   // K, a multiple of 8
  std::int64_t out_features = 0;  // N: W's rows (2F for kSwiglu)
  const void* x = nullptr;        // [rows, K] of dtype, rows x_row_stride elements apart
  std::int64_t x_row_stride = 0;  // a multiple of 8
  const void* weight = nullptr;   // [N, K] contiguous, of dtype
  const void* bias = nullptr;     // [N] of dtype, or null
  void* y = nullptr;              // contiguous [rows, N] (kLinear) or [rows, N / 2] (kSwiglu)
  DType dtype = DType::kBF16;     // bfloat16 or float16
  FewRowsOutput output = FewRowsOutput::kLinear;
  FewRowsRope rope = {};  // kRopeQkv only
  // Blocks K is split over per tile: 0 chooses from the shape and the GPU; a positive count
  // asks for it (the tests run several), capped at a cluster's 8 blocks. K is split only where
  // the kernel runs from code built for sm_90 or newer (clusters; Hopper on).
  int k_splits = 0;
};

// Whether the kernel takes this product: a 16-bit dtype, 1 to kFewRowsGemmMaxRows rows, K and
// x's row stride multiples of 8, x, W and y on 16-byte boundaries (an even N for kSwiglu; for
// kRopeQkv heads of 64 to 256 dims in steps of 64 that make N, and the positions, frequencies,
// slots and pools given).
bool few_rows_gemm_takes(const FewRowsGemmArgs& args);

// Throws zt::Error for a product few_rows_gemm_takes refuses.
void few_rows_gemm(const FewRowsGemmArgs& args, cudaStream_t stream);

}  // namespace zt::cuda
