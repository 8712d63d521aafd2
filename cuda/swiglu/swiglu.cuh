// SwiGLU, out = silu(gate) * up, on rows of `ffn` elements. gate and up rows start
// in_row_stride elements apart, so one kernel serves separate [rows, ffn] tensors (stride
// ffn) and GLM's fused [rows, 2 * ffn] = [gate | up] layout (stride 2 * ffn, up = gate + ffn).
// For 16-bit dtypes silu(gate) rounds to the dtype before the product, as torch's
// F.silu(gate) * up does; the backward rounds where torch's autograd stores too.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/dtype.h"

namespace zt::cuda {

struct SwigluLayout {
  std::int64_t rows = 0;
  std::int64_t ffn = 0;
  std::int64_t in_row_stride = 0;  // between rows of gate (and of up)
};

// out: contiguous [rows, ffn].
void swiglu_forward(const void* gate, const void* up, void* out, DType dtype, const SwigluLayout& layout,
                    cudaStream_t stream);

// grad_out: contiguous [rows, ffn]; grad_gate and grad_up are laid out like gate and up
// (rows in_row_stride apart). With `out` (contiguous [rows, ffn]; may be null) the same pass
// also writes the forward's output again, bit for bit swiglu_forward's: a down projection that
// kept gate and up instead of its input gets its input back for the cost of one store.
void swiglu_backward(const void* grad_out, const void* gate, const void* up, void* grad_gate, void* grad_up, void* out,
                     DType dtype, const SwigluLayout& layout, cudaStream_t stream);

}  // namespace zt::cuda
