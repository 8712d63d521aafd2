// The one matrix product under matmul and linear, on Tensors: a CPU reference loop, and
// cuBLASLt on the GPU with strided and transposed views passed through as leading
// dimensions and transpose flags. Callers have checked dtypes, devices and sizes.
#pragma once

#include "tensor/tensor.h"

namespace zt::ops::detail {

// op(a) · op(b) (+ bias[n] on every row), op(x) = x or its last two dims swapped. Operands
// are [r, c] or [batch, r, c]; a 2-D operand beside a 3-D one is used for every batch entry.
// Returns a new contiguous [m, n], or [batch, m, n] when either operand is 3-D. Accumulates in
// float64 for float64 and float32 on the CPU, else in float32, and rounds once to the dtype.
Tensor gemm(const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, const Tensor& bias = Tensor());

// out += op(a) · op(b), in place, for 2-D operands and a contiguous 2-D `out` of their dtype
// or float32. On the GPU the sum is the GEMM's own epilogue (beta = 1: out is read once, the
// product never stored, a float32 out never rounded to 16 bits); on the CPU the product is
// rounded to the operands' dtype and then added.
void gemm_add(const Tensor& out, const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b);

}  // namespace zt::ops::detail
