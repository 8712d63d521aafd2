// A linear layer with its LoRA update as one op: y = x · Wᵀ (+ bias) + scale · (x · Aᵀ) · Bᵀ,
// W [out, in], A [rank, in], B [out, rank]. Apart, the update costs the GPU a [rows, out]
// scale, a [rows, out] add and, in backward, a [rows, in] sum of the two paths' input
// gradients: memory-bound passes as large as the layer's activations. Here the low-rank
// product lands in y, and its input gradient in grad_x, through the GEMMs' own epilogues
// (detail::gemm_add); only the [rows, rank] tensors are scaled. Without dropout only: an
// update with dropout reads another input than the layer does.
#pragma once

#include <cstdint>
#include <vector>

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

// Several updates of one input with one scale (q, k and v; gate and up): their A's stacked
// [Σ rank, in], so the down-projections x · Aᵢᵀ are one GEMM and their input gradients
// grad_downᵢ · Aᵢ one more, x and grad_x read once for all of them instead of once each.
struct LoraStack {
  Tensor a;                           // [Σ rank, in]: each update's A under the one before
  std::vector<std::int64_t> offsets;  // update i's rows are [offsets[i], offsets[i + 1])
  double scale = 1.0;
};
LoraStack stack_lora(const std::vector<Tensor>& as, double scale);

// scale · x · stack.aᵀ: [rows, Σ rank], update i's down in its columns (stacked_down_of).
Tensor lora_stacked_down(const Tensor& x, const LoraStack& stack);
// Update i's [rows, rank] columns of a stacked down, as a strided view.
Tensor stacked_down_of(const Tensor& down, const LoraStack& stack, std::size_t i);
// y [..., out] (contiguous, x's dtype) += down · Bᵀ, by the GEMM's epilogue.
void add_lora_up(const Tensor& y, const Tensor& down, const Tensor& b);

struct LoraStackGrads {
  std::vector<Tensor> grad_a;  // [rankᵢ, in] each (rows of one [Σ rank, in] product)
  std::vector<Tensor> grad_b;  // [outᵢ, rankᵢ] each
};
// The updates' gradients given each output's grad_y; their input gradient Σᵢ grad_downᵢ · Aᵢ
// is added into grad_x (x's shape, contiguous) when it is defined. down is lora_stacked_down's.
LoraStackGrads lora_stack_backward(const std::vector<Tensor>& grad_ys, const Tensor& x, const std::vector<Tensor>& bs,
                                   const LoraStack& stack, const Tensor& down, const Tensor& grad_x);

}  // namespace zt::ops
