// Elementwise arithmetic and dtype casts with their backwards. Each result is computed in
// float32 (float64 for float64) and rounded once to the dtype, as torch does for 16-bit
// tensors. Binary ops take b of a's shape, or of a trailing part of a's shape (b [hidden]
// beside a [tokens, hidden]), repeated over a's leading dims.
#pragma once

#include "tensor/tensor.h"

namespace zt::ops {

Tensor add_forward(const Tensor& a, const Tensor& b);
Tensor sub_forward(const Tensor& a, const Tensor& b);
Tensor mul_forward(const Tensor& a, const Tensor& b);
Tensor scale_forward(const Tensor& x, double factor);  // x * factor
// x + residual, both of one shape, into a new tensor (the transformer's skip connection).
Tensor residual_add_forward(const Tensor& x, const Tensor& residual);
// x converted to dtype as torch's .to(dtype) does; x itself when it already has that dtype.
Tensor cast_forward(const Tensor& x, DType dtype);

struct BinaryGrads {
  Tensor grad_a;  // a's shape
  Tensor grad_b;  // b's shape (summed over the leading dims b was repeated along)
};

// Gradients that pass grad_out through unchanged return grad_out itself, not a copy, as
// torch's autograd does; callers never write gradients in place.
BinaryGrads add_backward(const Tensor& grad_out, const Shape& b_shape);
BinaryGrads sub_backward(const Tensor& grad_out, const Shape& b_shape);
BinaryGrads mul_backward(const Tensor& grad_out, const Tensor& a, const Tensor& b);
Tensor scale_backward(const Tensor& grad_out, double factor);
BinaryGrads residual_add_backward(const Tensor& grad_out);  // {grad_out, grad_out}
// grad_out cast back to the forward input's dtype.
Tensor cast_backward(const Tensor& grad_out, DType input_dtype);

}  // namespace zt::ops
