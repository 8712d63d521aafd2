// The differentiable ops: each runs the forward of its ops/ pair, and, when recording,
// records a node whose backward calls the ops/ backward with only what it needs saved.
// Arguments that carry no gradient (ids, labels, positions, cu_seqlens) are plain Tensors.
#pragma once

#include "autograd/variable.h"
#include "ops/attention/attention.h"
#include "ops/attention/attention_backend.h"
#include "ops/embedding/row_gather.h"
#include "ops/loss/cross_entropy.h"
#include "ops/norm/rmsnorm.h"
#include "ops/rope/rope.h"

namespace zt::autograd {

// Elementwise (b of a's shape or of a trailing part of it, repeated over a's leading dims).
Variable add(const Variable& a, const Variable& b);
Variable sub(const Variable& a, const Variable& b);
Variable mul(const Variable& a, const Variable& b);
Variable scale(const Variable& x, double factor);
Variable residual_add(const Variable& x, const Variable& residual);
Variable cast(const Variable& x, DType dtype);
// Inverted dropout drawing its mask from this thread's generator; the identity when not
// training or p = 0 (and then it draws nothing).
Variable dropout(const Variable& x, double p, bool training = true);

// Reductions: over every element, or over one dim.
Variable sum(const Variable& x);
Variable mean(const Variable& x);
Variable sum(const Variable& x, std::int64_t dim, bool keepdim = false);
Variable mean(const Variable& x, std::int64_t dim, bool keepdim = false);

// Shapes: views of the data where possible, their gradients reshaped or padded back.
Variable reshape(const Variable& x, const Shape& shape);
Variable narrow(const Variable& x, std::int64_t dim, std::int64_t start, std::int64_t length);

// The gradient sink an op adds a weight's gradient into itself, as the op keeps it: the weight,
// whose buffer is asked for only when the gradient is added (Variable::grad_sink), so the
// optimizer may allocate it then. Empty unless the weight is a trained leaf with a sink.
// on_the_gpu (the embedding, the fused loss head) also needs the weight on a GPU: on the CPU a
// leaf's contributions are summed in its dtype and delivered, as the ZeRO engines (which set no
// sinks) sum them, so CPU runs of the engines agree bit for bit even where one weight is used
// twice (a tied embedding and LM head, over accumulated micro-batches).
struct GradSinkRef {
  Variable weight;
  static GradSinkRef of(const Variable& weight);
  static GradSinkRef on_the_gpu(const Variable& weight);
  Tensor buffer() const { return weight.defined() ? weight.grad_sink() : Tensor(); }
};

// Products and lookups.
Variable linear(const Variable& x, const Variable& weight, const Variable& bias = Variable());
Variable matmul(const Variable& a, const Variable& b, bool transpose_a = false, bool transpose_b = false);
// linear(x, weight, bias) + scale · linear(linear(x, lora_a), lora_b) as one op
// (ops/gemm/lora_linear.h): LoRA without dropout.
Variable lora_linear(const Variable& x, const Variable& weight, const Variable& bias, const Variable& lora_a,
                     const Variable& lora_b, double scale);
// One linear layer of several that read the same input (q, k and v; gate and up).
struct Projection {
  Variable weight{};
  Variable bias{};              // may be undefined
  Variable lora_a{}, lora_b{};  // both undefined without LoRA (no dropout: lora_linear)
  double lora_scale = 1.0;
};
// The projections of x, recorded as one op: its backward adds each layer's input gradient
// into the first one's by the GEMM (ops::LinearGradTargets) instead of the engine summing
// separate tensors, one add pass over [rows, in] fewer per extra projection.
std::vector<Variable> projections(const Variable& x, const std::vector<Projection>& layers);
// x · [W_0; W_1; ...]ᵀ for weights stored one after another (Tensor::adjacent_rows: a layer's
// gate and up, allocated together), no bias, as one GEMM each way: the input gradient is one
// product over the joined rows, and the weight gradients one product added into the weights'
// fp32 sinks where those lie one after another too (the optimizer's buffer holds a layer's
// parameters in order), else one [Σ rows, in] gradient handed to each weight as its rows.
// Throws when the weights are not so stored.
Variable joined_linear(const Variable& x, const std::vector<Variable>& weights);
Variable embedding(const Variable& weight, const Tensor& ids, bool deterministic = false);
// x [rows, width]'s rows picked by gather.index; the backward gathers by gather's sources
// (ops/embedding/row_gather.h), so it is deterministic.
Variable gather_rows(const Variable& x, const ops::RowGather& gather);

// Transformer pieces.
Variable rmsnorm(const Variable& x, const Variable& weight, float eps, ops::RmsNormStyle style);
// The pre-norm block's residual add and the norm that reads it as one op: {sum = x + residual,
// rmsnorm(sum)}, bit for bit the unfused pair. Its backward adds the sum's own gradient (from
// the next residual) inside the norm's backward kernel, where the engine would add the two
// separately, and hands the result to x and residual alike.
std::vector<Variable> residual_rmsnorm(const Variable& x, const Variable& residual, const Variable& weight, float eps,
                                       ops::RmsNormStyle style);
Variable rope(const Variable& x, const Tensor& positions, const ops::RopeConfig& config);
Variable swiglu(const Variable& gate, const Variable& up);
Variable swiglu_fused(const Variable& gate_up);
// The MLP's down projection of silu(gate) * up: linear(swiglu_fused(gate_up), weight, bias) bit
// for bit, as one op that keeps gate_up (which the SwiGLU's backward reads anyway) and not the
// [..., ffn] activation the weight gradient reads. Backward takes the activation's gradient
// first, then the SwiGLU backward writes the activation again beside its own gradient
// (ops::swiglu_fused_backward_recomputing), then the weight gradient is taken: one more store
// per layer instead of [..., ffn] held from the forward to the backward.
Variable swiglu_linear(const Variable& gate_up, const Variable& weight, const Variable& bias = Variable());
Variable tanh(const Variable& x);
// Prefix keys and values: both defined or both undefined.
Variable attention(const Variable& q, const Variable& k, const Variable& v, const Tensor& cu_seqlens,
                   const ops::AttentionConfig& config, const Variable& prefix_k = Variable(),
                   const Variable& prefix_v = Variable(), ops::AttentionImpl impl = ops::AttentionImpl::kZerotune);

// Probabilities and losses.
Variable softmax(const Variable& x);
Variable cross_entropy(const Variable& logits, const Tensor& labels, const ops::CrossEntropyOptions& options = {});

}  // namespace zt::autograd

// Fused lm_head + cross-entropy (ops/loss/linear_cross_entropy.h): the loss of
// cross_entropy(hidden · weightᵀ, labels) without the [tokens, vocab] logits. While
// recording, the forward also computes the gradients of the inputs that need one and keeps
// them until backward. A tied lm_head is the embedding's Variable passed as weight.
#include "ops/loss/linear_cross_entropy.h"

namespace zt::autograd {

Variable linear_cross_entropy(const Variable& hidden, const Variable& weight, const Tensor& labels,
                              const ops::LinearCrossEntropyOptions& options = {});

// The same node over a forward already run (with the options it ran with): `forward.loss` is
// the Variable's value and its backward scales `forward`'s gradients, as linear_cross_entropy's
// does. For a caller that adjusts those gradients between the pass and the recording
// (models/sequence_log_probs.h: per-sequence factors known only after the pass).
Variable linear_cross_entropy_recorded(const Variable& hidden, const Variable& weight,
                                       ops::LinearCrossEntropyOutput forward,
                                       const ops::LinearCrossEntropyOptions& options);

}  // namespace zt::autograd
