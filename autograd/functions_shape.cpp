#include "autograd/functions.h"
#include "autograd/node.h"

namespace zt::autograd {

Variable reshape(const Variable& x, const Shape& shape) {
  Shape input_shape = x.data().shape();
  return record_one("reshape", x.data().reshape(shape), {x}, [input_shape](const TensorList& g, const NeedsList&) {
    return TensorList{g[0].reshape(input_shape)};
  });
}

// The gradient of a slice is the slice's gradient placed in zeros of the input's shape.
Variable narrow(const Variable& x, std::int64_t dim, std::int64_t start, std::int64_t length) {
  const Tensor& input = x.data();
  Shape input_shape = input.shape();
  DType dtype = input.dtype();
  Device device = input.device();
  return record_one("narrow", input.narrow(dim, start, length), {x}, [=](const TensorList& g, const NeedsList&) {
    Tensor grad = Tensor::zeros(input_shape, dtype, device);
    grad.narrow(dim, start, length).copy_from(g[0]);
    return TensorList{grad};
  });
}

}  // namespace zt::autograd
