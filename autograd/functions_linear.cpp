#include "autograd/functions.h"
#include "autograd/node.h"
#include "autograd/op_region.h"
#include "ops/embedding/embedding.h"
#include "ops/gemm/linear.h"
#include "ops/gemm/lora_linear.h"
#include "ops/gemm/matmul.h"

namespace zt::autograd {

Variable linear(const Variable& x, const Variable& weight, const Variable& bias) {
  OpRegion region("linear");
  Tensor y = ops::linear_forward(x.data(), weight.data(), bias.defined() ? bias.data() : Tensor());
  std::vector<Variable> inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  // Only what the needed gradients read is kept: a frozen weight's layer keeps no input.
  Tensor saved_x = weight.requires_grad() ? x.data() : Tensor();
  Tensor saved_weight = x.requires_grad() ? weight.data() : Tensor();
  // A trained weight's gradient may go straight into its sink (the optimizer's fp32 buffer).
  Tensor sink = weight.is_leaf() && weight.requires_grad() ? weight.grad_sink() : Tensor();
  return record_one(
      "linear", std::move(y), inputs, [saved_x, saved_weight, sink](const TensorList& g, const NeedsList& needs) {
        bool with_bias = needs.size() > 2;
        ops::LinearGrads grads =
            ops::linear_backward(g[0], saved_x, saved_weight, {needs[0], needs[1], with_bias && needs[2]}, sink);
        TensorList out{grads.grad_x, grads.grad_weight};
        if (with_bias) out.push_back(grads.grad_bias);
        return out;
      });
}

Variable lora_linear(const Variable& x, const Variable& weight, const Variable& bias, const Variable& lora_a,
                     const Variable& lora_b, double scale) {
  OpRegion region("linear");
  ops::LoraLinearOutput forward = ops::lora_linear_forward(
      x.data(), weight.data(), bias.defined() ? bias.data() : Tensor(), lora_a.data(), lora_b.data(), scale);
  std::vector<Variable> inputs{x, weight, lora_a, lora_b};
  if (bias.defined()) inputs.push_back(bias);
  Tensor saved_x = x.data(), saved_a = lora_a.data(), saved_b = lora_b.data(), down = forward.down;
  Tensor saved_weight = x.requires_grad() ? weight.data() : Tensor();
  return record_one("linear", std::move(forward.y), inputs, [=](const TensorList& g, const NeedsList& needs) {
    const bool with_bias = needs.size() > 4;
    ops::LoraLinearGrads grads = ops::lora_linear_backward(g[0], saved_x, saved_weight, saved_a, saved_b, down, scale,
                                                           {needs[0], needs[1], with_bias && needs[4]});
    TensorList out{grads.base.grad_x, grads.base.grad_weight, grads.grad_a, grads.grad_b};
    if (with_bias) out.push_back(grads.base.grad_bias);
    return out;
  });
}

Variable matmul(const Variable& a, const Variable& b, bool transpose_a, bool transpose_b) {
  OpRegion region("matmul");
  Tensor a_value = a.data(), b_value = b.data();
  return record_one("matmul", ops::matmul_forward(a_value, b_value, transpose_a, transpose_b), {a, b},
                    [=](const TensorList& g, const NeedsList& needs) {
                      ops::MatmulGrads grads = ops::matmul_backward(g[0], a_value, b_value, transpose_a, transpose_b);
                      return TensorList{needs[0] ? grads.grad_a : Tensor(), needs[1] ? grads.grad_b : Tensor()};
                    });
}

Variable embedding(const Variable& weight, const Tensor& ids, bool deterministic) {
  OpRegion region("embedding");
  std::int64_t vocab_size = weight.data().size(0);
  return record_one("embedding", ops::embedding_forward(weight.data(), ids), {weight},
                    [ids, vocab_size, deterministic](const TensorList& g, const NeedsList&) {
                      return TensorList{ops::embedding_backward(g[0], ids, vocab_size, deterministic)};
                    });
}

}  // namespace zt::autograd
