#include "autograd/functions.h"
#include "autograd/node.h"
#include "autograd/op_region.h"
#include "ops/elementwise/tanh.h"

namespace zt::autograd {

// The backward needs only the output (1 − tanh²), which the forward keeps anyway.
Variable tanh(const Variable& x) {
  OpRegion region("tanh");
  Tensor out = ops::tanh_forward(x.data());
  return record_one("tanh", out, {x},
                    [out](const TensorList& g, const NeedsList&) { return TensorList{ops::tanh_backward(g[0], out)}; });
}

}  // namespace zt::autograd
