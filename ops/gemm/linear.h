// Linear layer in the HF/torch layout: y = x · Wᵀ + b with weight [out, in], through cuBLASLt
// on the GPU (the bias fused as its epilogue; a few rows through cuda/gemm/few_rows) and a loop
// on the CPU.
#pragma once

#include "tensor/tensor.h"

namespace zt::ops {

// x [..., in], weight [out, in], bias [out] or undefined -> [..., out]. Inside a
// FewRowsGemmScope (few_rows_product.h), a few rows on the GPU (a batched decode step) go to
// cuda/gemm/few_rows instead of cuBLASLt.
Tensor linear_forward(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

// silu(gate) * up of the linear layer whose weight is [gate; up] ([2 * ffn, in], bias likewise)
// -> [..., ffn]: swiglu_fused_forward(linear_forward(x, weight, bias)), bit for bit; inside a
// FewRowsGemmScope, a few rows on the GPU as one kernel whose epilogue is the SwiGLU (the
// product never stored), summing in the order linear_forward's kernel does. Inference only (no
// backward): a decode step's MLP.
Tensor linear_swiglu_forward(const Tensor& x, const Tensor& gate_up_weight, const Tensor& bias = Tensor());

struct LinearGrads {
  Tensor grad_x;       // x's shape: grad_y · W
  Tensor grad_weight;  // [out, in]: grad_yᵀ · x, summed over every leading dim of x
  Tensor grad_bias;    // [out]: grad_y summed over rows with fp32 accumulation
  // Each is undefined when not needed.
};

// Which gradients to compute: a frozen weight (LoRA, freeze fine-tuning) or an input that
// needs none skips its GEMM.
struct LinearGradsNeeded {
  bool x = true;
  bool weight = true;
  bool bias = false;
};
// Gradients summed in place by the GEMMs (beta = 1) instead of written anew; both optional.
struct LinearGradTargets {
  // x's shape and dtype, contiguous: grad_x is added into it and returned as grad_x. Layers
  // reading one input (q/k/v, gate/up) sum their input gradients so, without an add pass.
  Tensor grad_x;
  // float32 [out, in], contiguous (the optimizer's gradient buffer): the weight's gradient
  // is added into it and grad_weight stays undefined; no 16-bit gradient is written and read
  // back to be summed.
  Tensor weight_sink;
};

// x is read only for grad_weight and weight only for grad_x, so either may be undefined
// when the other's gradient is not needed (nothing then keeps it alive for backward).
LinearGrads linear_backward(const Tensor& grad_y, const Tensor& x, const Tensor& weight,
                            const LinearGradsNeeded& needed, const LinearGradTargets& into = {});

}  // namespace zt::ops
