#include "autograd/functions.h"
#include "autograd/node.h"
#include "autograd/op_region.h"
#include "ops/elementwise/dropout.h"
#include "ops/elementwise/elementwise.h"
#include "runtime/generator.h"

namespace zt::autograd {
namespace {

TensorList pair_of(ops::BinaryGrads grads, const NeedsList& needs) {
  return {needs[0] ? std::move(grads.grad_a) : Tensor(), needs[1] ? std::move(grads.grad_b) : Tensor()};
}

}  // namespace

Variable add(const Variable& a, const Variable& b) {
  OpRegion region("add");
  Shape b_shape = b.data().shape();
  return record_one("add", ops::add_forward(a.data(), b.data()), {a, b},
                    [b_shape](const TensorList& g, const NeedsList& needs) {
                      return pair_of(ops::add_backward(g[0], b_shape), needs);
                    });
}

Variable sub(const Variable& a, const Variable& b) {
  OpRegion region("sub");
  Shape b_shape = b.data().shape();
  return record_one("sub", ops::sub_forward(a.data(), b.data()), {a, b},
                    [b_shape](const TensorList& g, const NeedsList& needs) {
                      return pair_of(ops::sub_backward(g[0], b_shape), needs);
                    });
}

Variable mul(const Variable& a, const Variable& b) {
  OpRegion region("mul");
  Tensor a_value = a.data(), b_value = b.data();
  return record_one("mul", ops::mul_forward(a_value, b_value), {a, b},
                    [a_value, b_value](const TensorList& g, const NeedsList& needs) {
                      return pair_of(ops::mul_backward(g[0], a_value, b_value), needs);
                    });
}

Variable scale(const Variable& x, double factor) {
  OpRegion region("scale");
  return record_one(
      "scale", ops::scale_forward(x.data(), factor), {x},
      [factor](const TensorList& g, const NeedsList&) { return TensorList{ops::scale_backward(g[0], factor)}; });
}

Variable residual_add(const Variable& x, const Variable& residual) {
  OpRegion region("residual_add");
  return record_one(
      "residual_add", ops::residual_add_forward(x.data(), residual.data()), {x, residual},
      [](const TensorList& g, const NeedsList& needs) { return pair_of(ops::residual_add_backward(g[0]), needs); });
}

Variable cast(const Variable& x, DType dtype) {
  OpRegion region("cast");
  DType input_dtype = x.data().dtype();
  if (input_dtype == dtype) return x;
  return record_one("cast", ops::cast_forward(x.data(), dtype), {x},
                    [input_dtype](const TensorList& g, const NeedsList&) {
                      return TensorList{ops::cast_backward(g[0], input_dtype)};
                    });
}

Variable dropout(const Variable& x, double p, bool training) {
  OpRegion region("dropout");
  if (!training || p == 0.0) return x;
  GeneratorState draw = default_generator().reserve(static_cast<std::uint64_t>(x.data().numel()));
  ops::DropoutConfig config{p, draw.seed, draw.offset};
  return record_one(
      "dropout", ops::dropout_forward(x.data(), config), {x},
      [config](const TensorList& g, const NeedsList&) { return TensorList{ops::dropout_backward(g[0], config)}; });
}

}  // namespace zt::autograd
