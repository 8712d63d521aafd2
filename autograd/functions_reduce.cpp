#include "autograd/functions.h"
#include "autograd/node.h"
#include "autograd/op_region.h"
#include "ops/reduce/reduce.h"

namespace zt::autograd {

Variable sum(const Variable& x) {
  OpRegion region("sum");
  Shape shape = x.data().shape();
  return record_one("sum", ops::sum_forward(x.data()), {x}, [shape](const TensorList& g, const NeedsList&) {
    return TensorList{ops::sum_backward(g[0], shape)};
  });
}

Variable mean(const Variable& x) {
  OpRegion region("mean");
  Shape shape = x.data().shape();
  return record_one("mean", ops::mean_forward(x.data()), {x}, [shape](const TensorList& g, const NeedsList&) {
    return TensorList{ops::mean_backward(g[0], shape)};
  });
}

Variable sum(const Variable& x, std::int64_t dim, bool keepdim) {
  OpRegion region("sum");
  Shape shape = x.data().shape();
  return record_one("sum", ops::sum_dim_forward(x.data(), dim, keepdim), {x},
                    [shape, dim, keepdim](const TensorList& g, const NeedsList&) {
                      return TensorList{ops::sum_dim_backward(g[0], shape, dim, keepdim)};
                    });
}

Variable mean(const Variable& x, std::int64_t dim, bool keepdim) {
  OpRegion region("mean");
  Shape shape = x.data().shape();
  return record_one("mean", ops::mean_dim_forward(x.data(), dim, keepdim), {x},
                    [shape, dim, keepdim](const TensorList& g, const NeedsList&) {
                      return TensorList{ops::mean_dim_backward(g[0], shape, dim, keepdim)};
                    });
}

}  // namespace zt::autograd
