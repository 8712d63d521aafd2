#include "autograd/node.h"

#include "autograd/grad_mode.h"
#include "autograd/op_region.h"
#include "runtime/error.h"

namespace zt::autograd {

Node::Node(std::string name, std::vector<Edge> inputs, std::vector<OutputMeta> outputs, BackwardFn backward)
    : name_(std::move(name)),
      inputs_(std::move(inputs)),
      outputs_(std::move(outputs)),
      backward_(std::move(backward)) {}

std::vector<Tensor> Node::apply(std::vector<Tensor> grad_outputs) {
  ZT_REQUIRE(backward_ != nullptr, "backward through '" + name_ +
                                       "' a second time: its saved tensors were released after the first "
                                       "backward; run the forward again");
  for (std::size_t i = 0; i < outputs_.size(); ++i)
    if (!grad_outputs[i].defined())
      grad_outputs[i] = Tensor::zeros(outputs_[i].shape, outputs_[i].dtype, outputs_[i].device);
  std::vector<bool> needs(inputs_.size());
  for (std::size_t k = 0; k < inputs_.size(); ++k) needs[k] = inputs_[k].connected();
  std::vector<Tensor> grads;
  {
    OpRegion region(name_);
    grads = backward_(grad_outputs, needs);
  }
  backward_ = nullptr;  // releases the saved tensors the closure holds
  ZT_REQUIRE(grads.size() == inputs_.size(), "backward of '" + name_ + "' returned " + std::to_string(grads.size()) +
                                                 " gradients for " + std::to_string(inputs_.size()) + " inputs");
  return grads;
}

namespace {

Edge edge_to(const Variable& input) {
  if (!input.requires_grad()) return {};
  if (input.is_leaf()) return {nullptr, 0, input.impl()};
  return {input.grad_fn(), input.impl()->output_index, nullptr};
}

}  // namespace

std::vector<Variable> record(const std::string& name, std::vector<Tensor> outputs, const std::vector<Variable>& inputs,
                             BackwardFn backward) {
  bool any_requires_grad = false;
  for (const Variable& input : inputs) any_requires_grad |= input.requires_grad();
  std::vector<Variable> results;
  results.reserve(outputs.size());
  if (!any_requires_grad || !grad_enabled()) {
    for (Tensor& out : outputs) results.emplace_back(std::move(out));
    return results;
  }
  std::vector<Edge> edges;
  edges.reserve(inputs.size());
  for (const Variable& input : inputs) edges.push_back(edge_to(input));
  std::vector<OutputMeta> metas;
  metas.reserve(outputs.size());
  for (const Tensor& out : outputs) metas.push_back({out.shape(), out.dtype(), out.device()});
  auto node = std::make_shared<Node>(name, std::move(edges), std::move(metas), std::move(backward));
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    auto impl = std::make_shared<VariableImpl>();
    impl->data = std::move(outputs[i]);
    impl->requires_grad = is_floating(impl->data.dtype());
    impl->grad_fn = node;
    impl->output_index = i;
    impl->name = name;
    results.push_back(Variable::from_impl(std::move(impl)));
  }
  return results;
}

Variable record_one(const std::string& name, Tensor output, const std::vector<Variable>& inputs, BackwardFn backward) {
  return record(name, {std::move(output)}, inputs, std::move(backward))[0];
}

}  // namespace zt::autograd
