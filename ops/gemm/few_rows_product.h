// The linear products of a few rows on the GPU (a batched decode step) through
// cuda/gemm/few_rows, which streams the weight towards the memory's rate and can end in SwiGLU,
// where cuBLASLt's kernels for so few rows reach 0.9-2.3 TB/s on an H100, or in RoPE and the
// paged KV cache's write (few_rows_qkv_rope); nothing where it does not apply (the CPU, more
// rows, float32, strides or alignments it cannot take, or outside a FewRowsGemmScope), and the
// caller runs the general product.
#pragma once

#include <optional>

#include "cuda/gemm/few_rows/few_rows_gemm.cuh"
#include "tensor/tensor.h"

namespace zt::ops {

// Which products of a few rows on the GPU go to the few-row kernel: none (cuBLASLt's); the
// SwiGLU of a joined gate/up weight only (linear_swiglu_forward: the product it saves a launch
// on); that and every product whose K exceeds its N (a decoder's down projection, which
// cuBLASLt splits over K and reduces in a second launch; also grouped-query attention's k and v
// where a layer's q, k and v are not one joined weight); or every linear, a joined q/k/v ending
// in RoPE and the cache's write (few_rows_qkv_rope).
enum class FewRowsProducts { kNone, kSwiglu, kSwigluAndLongK, kAll };

// While one lives, this thread's linear_forward and linear_swiglu_forward send `products` to the
// few-row kernel. kNone outside any scope: a decode step captured as a CUDA graph is captured
// each way and the fastest graph kept (infer/decode_graph.h), so the kernel runs only where it
// measured faster. The kernel loads its first weight tiles before it waits for the kernel before
// it (cuda/common/programmatic_launch.cuh), so no kernel of a step in a scope may write a
// weight: a decode step's weights are written only when the model loads.
class FewRowsGemmScope {
 public:
  explicit FewRowsGemmScope(FewRowsProducts products);
  ~FewRowsGemmScope();
  FewRowsGemmScope(const FewRowsGemmScope&) = delete;
  FewRowsGemmScope& operator=(const FewRowsGemmScope&) = delete;

 private:
  FewRowsProducts previous_;
};

// Where a decode step's joined [q; k; v] product ends (cuda::FewRowsOutput::kRopeQkv): q's and
// k's heads rotated by each row's position (rotate-half over the whole head), k's and v's heads
// also stored at each row's slot of the paged cache's pools. q_heads follows from the weight's
// rows; kv_heads and head_dim are the pools'.
struct FewRowsQkvCache {
  Tensor positions;             // int64 [rows] on the device
  Tensor inv_freq;              // float32 [head_dim / 2] on the device, as ops::gpu_rope's frequencies
  Tensor slots;                 // int64 [rows]: the cache row of each; -1 skips the row
  Tensor key_pool, value_pool;  // [blocks, block_size, kv_heads, head_dim] of x's dtype
};

// Inside a FewRowsGemmScope of every product (FewRowsProducts::kAll): x [rows, K] times the
// joined weight [N, K] (+ bias [N]) as one launch that also rotates and caches, -> [rows, N]
// with q and k rotated; the same bits as linear_forward then rope_and_write_kv_slots. nullopt,
// having done nothing, where the kernel does not take it (outside such a scope, more rows, heads
// not a multiple of 64 dims, ...): the caller runs the product and the cache's RoPE.
std::optional<Tensor> few_rows_qkv_rope(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                        const FewRowsQkvCache& cache);

}  // namespace zt::ops

namespace zt::ops::detail {

// x [rows, K] (rows one stride apart, unit column stride), weight [N, K], bias [N] or
// undefined, checked by the caller -> [rows, N] (kLinear) or [rows, N / 2] (kSwiglu).
std::optional<Tensor> few_rows_product(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                       cuda::FewRowsOutput output);

}  // namespace zt::ops::detail
