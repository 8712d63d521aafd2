// The linear layers of a decode step as one launch each: for a few rows (1 to 32 tokens),
//   out[rows, n] = epilogue(prologue(x)[rows, k] · W[n, k]ᵀ),
// W stored [out_features, in_features] as torch's Linear, fp32 accumulation. At so few rows a
// linear layer reads every weight once and does little else, so the kernel is judged by
// weight bytes per second; the prologue and epilogue fold in the small kernels a decode layer
// would otherwise launch around each GEMM (RMSNorm, SwiGLU, the bias and the residual add).
//   prologue kNone:    the row as it is.
//   prologue kRmsNorm: x is the residual stream; its row is normalised with norm_weight and
//                      eps exactly as ops/norm's RMSNorm does (round_normalized: Qwen's style,
//                      h * rstd rounded to the dtype before the weight; else GLM's), and the
//                      normalised element rounded to the dtype, as rmsnorm_forward stores it.
//   prologue kSwiglu:  the element is dtype(dtype(silu(gate)) * up), as ops/swiglu stores it;
//                      gate rows at x, up rows at `up` (GLM's fused [gate | up]: up = x + k).
//   epilogue:          y = dtype(acc + bias), the bias added in fp32 as the GEMM's epilogue
//                      does; then, with a residual, out = dtype(residual + y): torch's
//                      `residual + linear(...)`.
// How the work is cut (a warp per 16 weight rows, split-K across blocks) is explained in
// gemv.cu.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "runtime/dtype.h"

namespace zt::cuda {

// The most rows one launch takes: a larger batch is a GEMM's work (ops/gemm).
inline constexpr std::int64_t kGemvMaxRows = 32;

enum class GemvPrologue { kNone, kRmsNorm, kSwiglu };

// Every tensor is of the one dtype (float32, bfloat16 or float16). Row strides are in
// elements; elements within a row are contiguous.
struct GemvArgs {
  const void* x = nullptr;             // [rows, k] (kSwiglu: the gate rows)
  const void* up = nullptr;            // kSwiglu: the up rows, laid out as x's
  std::int64_t x_row_stride = 0;       // between rows of x (and of up); >= k
  const void* norm_weight = nullptr;   // kRmsNorm: [k]
  float eps = 0.0f;                    // kRmsNorm
  bool round_normalized = true;        // kRmsNorm: Qwen's rounding (true) or GLM's
  const void* weight = nullptr;        // [n, k]
  std::int64_t weight_row_stride = 0;  // >= k
  const void* bias = nullptr;          // [n], or null
  const void* residual = nullptr;      // [rows, n], or null
  std::int64_t residual_row_stride = 0;
  // [rows, n] contiguous. It may be the residual itself (each element is read, then written,
  // by one thread) but must not overlap x, up or the weight.
  void* out = nullptr;
};

struct GemvShape {
  std::int64_t rows = 0;  // 0 to kGemvMaxRows
  std::int64_t k = 0;     // in_features
  std::int64_t n = 0;     // out_features
};

// How many blocks share each output column's k range (1: no split, no workspace). It depends
// on the shape and dtype only, never on the GPU, so results have the same bits on every GPU.
int gemv_splits(DType dtype, const GemvShape& shape);

// The workspace a launch with splits > 1 needs (0 otherwise): arrival counters for the
// column strips (a fixed 32 KiB prefix, the same for every shape), then fp32 partial sums.
std::size_t gemv_workspace_bytes(DType dtype, const GemvShape& shape);

// Runs on `stream`. workspace: null (one is taken from the caching allocator and its counters
// cleared on the stream), or at least gemv_workspace_bytes of device memory zeroed once before
// its first use: every launch leaves the counters zero again and no launch writes partials
// over them, so one buffer kept by the caller (a captured decode step) serves every layer,
// whatever its shape, without clearing. One workspace serves one launch at a time. Bad
// shapes, strides or pointers (or n over 1 Mi columns) throw zt::Error.
void gemv(const GemvArgs& args, GemvPrologue prologue, DType dtype, const GemvShape& shape, void* workspace,
          cudaStream_t stream);

}  // namespace zt::cuda
