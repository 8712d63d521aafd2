// Sums and means over all elements or over one dim, with their backwards. Accumulation is
// float32 on the GPU (float64 in the CPU reference) whatever the dtype, and the result
// rounds once to x's dtype; GPU sums are deterministic (a fixed split and order).
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace zt::ops {

// Over all elements: a 0-dim tensor of x's dtype.
Tensor sum_forward(const Tensor& x);
Tensor mean_forward(const Tensor& x);

// Over dim (negative counts from the end); keepdim leaves it as size 1.
Tensor sum_dim_forward(const Tensor& x, std::int64_t dim, bool keepdim);
Tensor mean_dim_forward(const Tensor& x, std::int64_t dim, bool keepdim);

// grad_out is the forward's output shape; the result has input_shape.
Tensor sum_backward(const Tensor& grad_out, const Shape& input_shape);
Tensor mean_backward(const Tensor& grad_out, const Shape& input_shape);
Tensor sum_dim_backward(const Tensor& grad_out, const Shape& input_shape, std::int64_t dim, bool keepdim);
Tensor mean_dim_backward(const Tensor& grad_out, const Shape& input_shape, std::int64_t dim, bool keepdim);

// Sums x over its leading dims down to trailing_shape, a suffix of x's shape (the gradient
// of an operand broadcast over leading dims, like a bias).
Tensor sum_to_trailing(const Tensor& x, const Shape& trailing_shape);

// x [rows, cols] (float64, float32, bfloat16 or float16; cols >= 1; rows may be strided, as
// at the last position of [batch, positions, vocab] logits) -> int64 [rows] on x's device:
// the column of each row's largest value, the first of equal maxima (-0 equals +0), as
// greedy decoding picks a token. A NaN counts as larger than any number, as in torch.argmax:
// a row with NaNs gives its first NaN.
Tensor argmax_rows(const Tensor& x);

}  // namespace zt::ops
