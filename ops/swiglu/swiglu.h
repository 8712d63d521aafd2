// SwiGLU activation, silu(gate) * up with silu(x) = x * sigmoid(x), from separate gate and
// up tensors (Qwen's gate_proj / up_proj) or from one fused [..., 2 * ffn] tensor laid out
// [gate | up] along the last dim (GLM's dense_h_to_4h). For 16-bit inputs silu(gate)
// rounds to the dtype before the product, as torch does.
#pragma once

#include "tensor/tensor.h"

namespace zt::ops {

// gate, up [..., ffn] of one shape and dtype -> [..., ffn].
Tensor swiglu_forward(const Tensor& gate, const Tensor& up);

struct SwigluGrads {
  Tensor grad_gate;  // gate's shape
  Tensor grad_up;    // up's shape
};

SwigluGrads swiglu_backward(const Tensor& grad_out, const Tensor& gate, const Tensor& up);

// gate_up [..., 2 * ffn] = [gate | up] -> [..., ffn].
Tensor swiglu_fused_forward(const Tensor& gate_up);

// The gradient of gate_up, [..., 2 * ffn] laid out [grad_gate | grad_up].
Tensor swiglu_fused_backward(const Tensor& grad_out, const Tensor& gate_up);

struct SwigluRecomputed {
  Tensor grad_gate_up;  // swiglu_fused_backward's
  Tensor out;           // swiglu_fused_forward(gate_up), bit for bit
};

// swiglu_fused_backward that also writes the forward's output again in the same pass: a down
// projection that kept gate_up instead of its own input (autograd::swiglu_linear) gets that
// input back for one more store, where saving it costs [..., ffn] per layer until backward.
SwigluRecomputed swiglu_fused_backward_recomputing(const Tensor& grad_out, const Tensor& gate_up);

}  // namespace zt::ops
