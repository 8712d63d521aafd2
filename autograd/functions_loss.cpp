#include "autograd/functions.h"
#include "autograd/node.h"
#include "autograd/op_region.h"
#include "ops/reduce/softmax.h"

namespace zt::autograd {

Variable softmax(const Variable& x) {
  OpRegion region("softmax");
  Tensor y = ops::softmax_forward(x.data());
  return record_one("softmax", y, {x},
                    [y](const TensorList& g, const NeedsList&) { return TensorList{ops::softmax_backward(g[0], y)}; });
}

Variable cross_entropy(const Variable& logits, const Tensor& labels, const ops::CrossEntropyOptions& options) {
  OpRegion region("cross_entropy");
  Tensor logits_value = logits.data();
  ops::CrossEntropyOutput forward = ops::cross_entropy_forward(logits_value, labels, options);
  Tensor logsumexp = forward.logsumexp, valid_count = forward.valid_count;
  return record_one("cross_entropy", std::move(forward.loss), {logits}, [=](const TensorList& g, const NeedsList&) {
    return TensorList{ops::cross_entropy_backward(g[0], logits_value, labels, logsumexp, valid_count, options)};
  });
}

}  // namespace zt::autograd
