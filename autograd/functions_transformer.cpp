#include "autograd/functions.h"
#include "autograd/node.h"
#include "autograd/op_region.h"
#include "autograd/saved_weight.h"
#include "ops/gemm/linear.h"
#include "ops/swiglu/swiglu.h"
#include "runtime/error.h"

namespace zt::autograd {

Variable rmsnorm(const Variable& x, const Variable& weight, float eps, ops::RmsNormStyle style) {
  OpRegion region("rmsnorm");
  Tensor x_value = x.data(), weight_value = weight.data();
  ops::RmsNormOutput forward = ops::rmsnorm_forward(x_value, weight_value, eps, style);
  Tensor rstd = forward.rstd;
  return record_one("rmsnorm", std::move(forward.y), {x, weight},
                    [x_value, weight_value, rstd, style](const TensorList& g, const NeedsList& needs) {
                      ops::RmsNormGrads grads = ops::rmsnorm_backward(g[0], x_value, weight_value, rstd, style);
                      return TensorList{needs[0] ? grads.grad_x : Tensor(), needs[1] ? grads.grad_weight : Tensor()};
                    });
}

std::vector<Variable> residual_rmsnorm(const Variable& x, const Variable& residual, const Variable& weight, float eps,
                                       ops::RmsNormStyle style) {
  OpRegion region("rmsnorm");
  Tensor weight_value = weight.data();
  ops::RmsNormResidualOutput forward =
      ops::rmsnorm_residual_forward(x.data(), residual.data(), weight_value, eps, style);
  Tensor sum = forward.sum, rstd = forward.rstd;
  return record("residual_rmsnorm", {std::move(forward.sum), std::move(forward.y)}, {x, residual, weight},
                [sum, weight_value, rstd, style](const TensorList& g, const NeedsList& needs) {
                  ops::RmsNormResidualGrads grads =
                      ops::rmsnorm_residual_backward(g[1], g[0], sum, weight_value, rstd, style);
                  return TensorList{needs[0] ? grads.grad_input : Tensor(), needs[1] ? grads.grad_input : Tensor(),
                                    needs[2] ? grads.grad_weight : Tensor()};
                });
}

Variable rope(const Variable& x, const Tensor& positions, const ops::RopeConfig& config) {
  OpRegion region("rope");
  return record_one("rope", ops::rope_forward(x.data(), positions, config), {x},
                    [positions, config](const TensorList& g, const NeedsList&) {
                      return TensorList{ops::rope_backward(g[0], positions, config)};
                    });
}

Variable swiglu(const Variable& gate, const Variable& up) {
  OpRegion region("swiglu");
  Tensor gate_value = gate.data(), up_value = up.data();
  return record_one("swiglu", ops::swiglu_forward(gate_value, up_value), {gate, up},
                    [gate_value, up_value](const TensorList& g, const NeedsList& needs) {
                      ops::SwigluGrads grads = ops::swiglu_backward(g[0], gate_value, up_value);
                      return TensorList{needs[0] ? grads.grad_gate : Tensor(), needs[1] ? grads.grad_up : Tensor()};
                    });
}

Variable swiglu_fused(const Variable& gate_up) {
  OpRegion region("swiglu");
  Tensor gate_up_value = gate_up.data();
  return record_one("swiglu", ops::swiglu_fused_forward(gate_up_value), {gate_up},
                    [gate_up_value](const TensorList& g, const NeedsList&) {
                      return TensorList{ops::swiglu_fused_backward(g[0], gate_up_value)};
                    });
}

namespace {

// swiglu_linear's backward: the activation's gradient, the SwiGLU's (writing the activation
// again when the weight gradient reads it), then the weight's and bias's.
TensorList swiglu_linear_backward(const Tensor& grad_y, const Tensor& gate_up, const SavedWeight& weight,
                                  const GradSinkRef& sink, const NeedsList& needs) {
  const bool with_bias = needs.size() > 2;
  const bool bias_needed = with_bias && needs[2];
  Tensor grad_gate_up, activation;
  if (needs[0]) {
    const Tensor grad_activation = ops::linear_backward(grad_y, Tensor(), weight.value(), {true, false, false}).grad_x;
    OpRegion region("swiglu");
    if (needs[1]) {
      ops::SwigluRecomputed recomputed = ops::swiglu_fused_backward_recomputing(grad_activation, gate_up);
      grad_gate_up = std::move(recomputed.grad_gate_up);
      activation = std::move(recomputed.out);
    } else {
      grad_gate_up = ops::swiglu_fused_backward(grad_activation, gate_up);
    }
  } else if (needs[1]) {
    OpRegion region("swiglu");
    activation = ops::swiglu_fused_forward(gate_up);
  }
  ops::LinearGrads grads;
  if (needs[1] || bias_needed)
    grads = ops::linear_backward(grad_y, activation, Tensor(), {false, needs[1], bias_needed},
                                 {.grad_x = Tensor(), .weight_sink = sink.buffer()});
  TensorList out{grad_gate_up, grads.grad_weight};
  if (with_bias) out.push_back(grads.grad_bias);
  return out;
}

}  // namespace

Variable swiglu_linear(const Variable& gate_up, const Variable& weight, const Variable& bias) {
  Tensor activation;
  {
    OpRegion region("swiglu");
    activation = ops::swiglu_fused_forward(gate_up.data());
  }
  OpRegion region("swiglu_linear");
  Tensor y = ops::linear_forward(activation, weight.data(), bias.defined() ? bias.data() : Tensor());
  std::vector<Variable> inputs{gate_up, weight};
  if (bias.defined()) inputs.push_back(bias);
  const Tensor saved_gate_up = gate_up.requires_grad() || weight.requires_grad() ? gate_up.data() : Tensor();
  const SavedWeight saved_weight = gate_up.requires_grad() ? SavedWeight::of(weight) : SavedWeight();
  // A trained weight's gradient may go straight into its sink (the optimizer's fp32 buffer).
  const GradSinkRef sink = GradSinkRef::of(weight);
  return record_one("swiglu_linear", std::move(y), inputs,
                    [saved_gate_up, saved_weight, sink](const TensorList& g, const NeedsList& needs) {
                      return swiglu_linear_backward(g[0], saved_gate_up, saved_weight, sink, needs);
                    });
}

Variable attention(const Variable& q, const Variable& k, const Variable& v, const Tensor& cu_seqlens,
                   const ops::AttentionConfig& config, const Variable& prefix_k, const Variable& prefix_v,
                   ops::AttentionImpl impl) {
  OpRegion region("attention");
  ZT_REQUIRE(prefix_k.defined() == prefix_v.defined(), "attention: prefix keys and values go together; got only the " +
                                                           std::string(prefix_k.defined() ? "keys" : "values"));
  ops::AttentionPrefix prefix;
  std::vector<Variable> inputs{q, k, v};
  if (prefix_k.defined()) {
    prefix = {prefix_k.data(), prefix_v.data()};
    inputs.push_back(prefix_k);
    inputs.push_back(prefix_v);
  }
  Tensor q_value = q.data(), k_value = k.data(), v_value = v.data();
  ops::AttentionOutput forward =
      ops::attention_forward_with(impl, q_value, k_value, v_value, cu_seqlens, config, prefix);
  Tensor out = forward.out, lse = forward.lse;
  return record_one("attention", std::move(forward.out), inputs, [=](const TensorList& g, const NeedsList&) {
    ops::AttentionGrads grads =
        ops::attention_backward_with(impl, g[0], q_value, k_value, v_value, out, lse, cu_seqlens, config, prefix);
    TensorList result{grads.grad_q, grads.grad_k, grads.grad_v};
    if (prefix.k.defined()) {
      result.push_back(grads.grad_prefix_k);
      result.push_back(grads.grad_prefix_v);
    }
    return result;
  });
}

}  // namespace zt::autograd
