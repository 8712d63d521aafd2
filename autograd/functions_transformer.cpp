#include "autograd/functions.h"
#include "autograd/node.h"
#include "autograd/op_region.h"
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
