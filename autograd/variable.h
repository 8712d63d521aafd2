// Variable: a Tensor that autograd tracks. Copies of a Variable share one identity (its
// gradient, hooks and history), as a torch tensor object does; `data()` is the value.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace zt::autograd {

class Node;

using GradReadyHook = std::function<void(const Tensor& grad)>;

struct VariableImpl {
  Tensor data;
  Tensor grad;  // leaves: accumulated (+=) across backward calls until zeroed
  bool requires_grad = false;
  std::shared_ptr<Node> grad_fn;  // the op that produced it; null for leaves
  std::size_t output_index = 0;   // which output of grad_fn this is
  std::vector<GradReadyHook> grad_ready_hooks;
  // Leaves: what gives the float32 buffer of the leaf's shape (the optimizer's gradient
  // buffer) that an op may add the leaf's gradient into itself, in its GEMM's epilogue, instead
  // of returning it for the engine to deliver (linear does); empty: every gradient is
  // delivered. Ops ask for the buffer when they add into it, so the optimizer may hold it only
  // from a step's first gradient to its update (train/optim/gradient_segments.h).
  std::function<Tensor()> grad_sink;
  std::string name;
};

class Variable {
 public:
  Variable() = default;
  explicit Variable(Tensor data, bool requires_grad = false, std::string name = "");
  static Variable from_impl(std::shared_ptr<VariableImpl> impl) { return Variable(std::move(impl)); }

  bool defined() const { return impl_ != nullptr; }
  const Tensor& data() const;
  const Tensor& grad() const;
  bool requires_grad() const { return impl_ && impl_->requires_grad; }
  bool is_leaf() const { return impl_ && impl_->grad_fn == nullptr; }
  const std::string& name() const;
  const std::shared_ptr<Node>& grad_fn() const;
  const std::shared_ptr<VariableImpl>& impl() const { return impl_; }

  // Backward from a scalar (gradient 1), or from any output with its gradient given.
  void backward() const;
  void backward(const Tensor& grad_output) const;

  void zero_grad() const;  // drops the accumulated gradient
  void set_grad(const Tensor& grad) const;
  // Turns tracking of a leaf on or off (freezing a parameter); not allowed on op outputs.
  void set_requires_grad(bool requires_grad) const;
  // Runs once per backward, as soon as this leaf's gradient for that backward is complete.
  void add_grad_ready_hook(GradReadyHook hook) const;
  // The leaf's gradient sink (VariableImpl::grad_sink): a float32 buffer of the leaf's shape
  // and device, contiguous; undefined removes it. set_grad_sink_source gives the buffer from
  // `source` whenever an op asks for it (an empty function removes it).
  void set_grad_sink(const Tensor& sink) const;
  void set_grad_sink_source(std::function<Tensor()> source) const;
  bool has_grad_sink() const;
  // The sink's buffer (checked as set_grad_sink checks it), undefined without a sink.
  Tensor grad_sink() const;
  Variable detach() const;  // same data, no history, no gradient

 private:
  explicit Variable(std::shared_ptr<VariableImpl> impl) : impl_(std::move(impl)) {}
  VariableImpl& checked_impl() const;
  std::shared_ptr<VariableImpl> impl_;
};

}  // namespace zt::autograd
