// Matrix products of 2-D and batched 3-D tensors, with either operand used transposed.
// Transposed and strided views go to cuBLASLt as they are (leading dimensions and transpose
// flags); a copy is made only for a matrix with no unit stride.
#pragma once

#include "tensor/tensor.h"

namespace zt::ops {

// op(a) · op(b), where op(x) is x, or x with its last two dims swapped when transpose_x.
// a is [m, k] or [batch, m, k] (stored [.., k, m] when transpose_a), b is [k, n] or
// [batch, k, n] (stored [.., n, k] when transpose_b). Two 3-D operands need equal batch
// sizes; a 2-D operand beside a 3-D one is used for every batch entry. The result is
// [m, n], or [batch, m, n] when either operand is 3-D.
Tensor matmul_forward(const Tensor& a, const Tensor& b, bool transpose_a = false, bool transpose_b = false);

struct MatmulGrads {
  Tensor grad_a;  // a's shape; for a 2-D a beside a 3-D b, summed over the batch
  Tensor grad_b;  // b's shape; likewise
};

MatmulGrads matmul_backward(const Tensor& grad_out, const Tensor& a, const Tensor& b, bool transpose_a = false,
                            bool transpose_b = false);

}  // namespace zt::ops
