// A linear layer with its LoRA update as one op: y = x · Wᵀ (+ bias) + scale · (x · Aᵀ) · Bᵀ,
// W [out, in], A [rank, in], B [out, rank]. Apart, the update costs the GPU a [rows, out]
// scale, a [rows, out] add and, in backward, a [rows, in] sum of the two paths' input
// gradients: memory-bound passes as large as the layer's activations. Here the low-rank
// product lands in y, and its input gradient in grad_x, through the GEMMs' own epilogues
// (detail::gemm_add); only the [rows, rank] tensors are scaled. Without dropout only: an
// update with dropout reads another input than the layer does.
#pragma once

#include "ops/gemm/linear.h"
#include "tensor/tensor.h"

namespace zt::ops {

struct LoraLinearOutput {
  Tensor y;     // x's shape with out features
  Tensor down;  // scale · x · Aᵀ [rows, rank], kept for backward
};

LoraLinearOutput lora_linear_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& a,
                                     const Tensor& b, double scale);

// The update alone onto a y computed otherwise (a 4-bit weight's product, models/quant/):
// y [..., out] (contiguous, x's dtype) += scale · (x · Aᵀ) · Bᵀ through the GEMM's epilogue,
// as lora_linear_forward adds it. Returns scale · x · Aᵀ.
Tensor add_lora_update(const Tensor& y, const Tensor& x, const Tensor& a, const Tensor& b, double scale);

struct LoraLinearGrads {
  LinearGrads base;  // of x, W and the bias, as linear_backward gives them
  Tensor grad_a;     // [rank, in]
  Tensor grad_b;     // [out, rank]
};

// `needed` as for linear_backward; A's and B's gradients are always computed. x is needed for
// grad_a, W for grad_x.
LoraLinearGrads lora_linear_backward(const Tensor& grad_y, const Tensor& x, const Tensor& weight, const Tensor& a,
                                     const Tensor& b, const Tensor& down, double scale, const LinearGradsNeeded& needed,
                                     const LinearGradTargets& into = {});

}  // namespace zt::ops
