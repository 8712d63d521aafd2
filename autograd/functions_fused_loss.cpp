#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "autograd/node.h"
#include "autograd/op_region.h"

namespace zt::autograd {

Variable linear_cross_entropy(const Variable& hidden, const Variable& weight, const Tensor& labels,
                              const ops::LinearCrossEntropyOptions& options) {
  OpRegion region("linear_cross_entropy");
  // The gradients come out of the forward's single pass over the vocabulary, so they are
  // computed exactly when this call will be recorded, and only for inputs that need them.
  bool recording = grad_enabled();
  ops::LinearCrossEntropyGradsNeeded needed{recording && hidden.requires_grad(), recording && weight.requires_grad()};
  ops::LinearCrossEntropyOutput forward =
      ops::linear_cross_entropy_forward(hidden.data(), weight.data(), labels, options, needed);
  return linear_cross_entropy_recorded(hidden, weight, std::move(forward), options);
}

Variable linear_cross_entropy_recorded(const Variable& hidden, const Variable& weight,
                                       ops::LinearCrossEntropyOutput forward,
                                       const ops::LinearCrossEntropyOptions& options) {
  Tensor loss = forward.loss;
  DType weight_dtype = weight.data().dtype();
  // A trained weight's gradient may go straight into its sink (the optimizer's fp32 buffer),
  // asked for in backward, where it is added: the forward keeps its own fp32 gradient.
  const GradSinkRef sink = GradSinkRef::on_the_gpu(weight);
  return record_one("linear_cross_entropy", std::move(loss), {hidden, weight},
                    [forward = std::move(forward), weight_dtype, options, sink](const TensorList& g, const NeedsList&) {
                      ops::LinearCrossEntropyGrads grads =
                          ops::linear_cross_entropy_backward(g[0], forward, weight_dtype, options, sink.buffer());
                      return TensorList{grads.grad_hidden, grads.grad_weight};
                    });
}

}  // namespace zt::autograd
