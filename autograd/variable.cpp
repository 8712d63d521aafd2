#include "autograd/variable.h"

#include "autograd/engine.h"
#include "runtime/error.h"

namespace zt::autograd {

Variable::Variable(Tensor data, bool requires_grad, std::string name) : impl_(std::make_shared<VariableImpl>()) {
  ZT_REQUIRE(!requires_grad || is_floating(data.dtype()),
             "only floating tensors can require gradients; '" + name + "' is " + dtype_name(data.dtype()));
  impl_->data = std::move(data);
  impl_->requires_grad = requires_grad;
  impl_->name = std::move(name);
}

VariableImpl& Variable::checked_impl() const {
  ZT_REQUIRE(impl_ != nullptr, "use of an undefined Variable");
  return *impl_;
}

const Tensor& Variable::data() const { return checked_impl().data; }
const Tensor& Variable::grad() const { return checked_impl().grad; }
const std::string& Variable::name() const { return checked_impl().name; }
const std::shared_ptr<Node>& Variable::grad_fn() const { return checked_impl().grad_fn; }

void Variable::backward() const {
  ZT_REQUIRE(data().numel() == 1, "backward() without a gradient needs a scalar output, but '" + name() +
                                      "' has shape " + shape_str(data().shape()) +
                                      "; pass the output gradient: backward(grad_output)");
  backward(Tensor::ones(data().shape(), data().dtype(), data().device()));
}

void Variable::backward(const Tensor& grad_output) const { run_backward({*this}, {grad_output}); }

void Variable::zero_grad() const { checked_impl().grad = Tensor(); }
void Variable::set_grad(const Tensor& grad) const { checked_impl().grad = grad; }
void Variable::add_grad_ready_hook(GradReadyHook hook) const {
  checked_impl().grad_ready_hooks.push_back(std::move(hook));
}

namespace {

void check_sink(const VariableImpl& impl, const Tensor& sink) {
  ZT_REQUIRE(!sink.defined() || (sink.dtype() == DType::kF32 && sink.shape() == impl.data.shape() &&
                                 sink.device() == impl.data.device() && sink.is_contiguous()),
             "set_grad_sink on '" + impl.name + "': the sink must be a contiguous float32 " +
                 shape_str(impl.data.shape()) + " on " + impl.data.device().str());
}

}  // namespace

void Variable::set_grad_sink(const Tensor& sink) const {
  check_sink(checked_impl(), sink);
  set_grad_sink_source(sink.defined() ? std::function<Tensor()>([sink] { return sink; }) : nullptr);
}

void Variable::set_grad_sink_source(std::function<Tensor()> source) const {
  VariableImpl& impl = checked_impl();
  ZT_REQUIRE(impl.grad_fn == nullptr, "set_grad_sink on '" + impl.name + "', which is not a leaf");
  impl.grad_sink = std::move(source);
}

bool Variable::has_grad_sink() const { return static_cast<bool>(checked_impl().grad_sink); }

Tensor Variable::grad_sink() const {
  const VariableImpl& impl = checked_impl();
  if (!impl.grad_sink) return Tensor();
  Tensor sink = impl.grad_sink();
  check_sink(impl, sink);
  return sink;
}

Variable Variable::detach() const { return Variable(data(), false, name()); }

void Variable::set_requires_grad(bool requires_grad) const {
  VariableImpl& impl = checked_impl();
  ZT_REQUIRE(impl.grad_fn == nullptr,
             "set_requires_grad on '" + impl.name + "', which is the output of an op, not a leaf");
  ZT_REQUIRE(!requires_grad || is_floating(impl.data.dtype()),
             "set_requires_grad on '" + impl.name + "': only floating-point tensors can require grad, it is " +
                 dtype_name(impl.data.dtype()));
  impl.requires_grad = requires_grad;
  if (!requires_grad) impl.grad = Tensor();
}

}  // namespace zt::autograd
