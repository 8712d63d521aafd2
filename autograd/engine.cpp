#include "autograd/engine.h"

#include <unordered_map>

#include "autograd/grad_mode.h"
#include "autograd/node.h"
#include "ops/elementwise/elementwise.h"
#include "runtime/error.h"
#include "runtime/profile/step_profiler.h"

namespace zt::autograd {
namespace {

thread_local const std::unordered_set<const VariableImpl*>* allowed_leaves = nullptr;

// Never in place: a gradient tensor may be shared by several inputs (add passes it on twice).
void accumulate(Tensor& slot, const Tensor& grad) { slot = slot.defined() ? ops::add_forward(slot, grad) : grad; }

struct GraphCounts {
  std::unordered_map<Node*, int> pending_inputs;          // edges into each node not yet delivered
  std::unordered_map<VariableImpl*, int> pending_leaves;  // edges into each leaf not yet delivered
};

GraphCounts count_dependencies(const std::vector<Node*>& starts) {
  GraphCounts counts;
  std::vector<Node*> stack = starts;
  std::unordered_set<Node*> seen(starts.begin(), starts.end());
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    for (const Edge& edge : node->inputs()) {
      if (edge.leaf) ++counts.pending_leaves[edge.leaf.get()];
      if (!edge.node) continue;
      ++counts.pending_inputs[edge.node.get()];
      if (seen.insert(edge.node.get()).second) stack.push_back(edge.node.get());
    }
  }
  return counts;
}

void deliver_to_leaf(VariableImpl& leaf, const Tensor& grad, GraphCounts& counts) {
  ZT_REQUIRE(allowed_leaves == nullptr || allowed_leaves->count(&leaf),
             "checkpoint: the checkpointed function used '" + leaf.name +
                 "', which needs a gradient but was not passed in its inputs; pass every Variable it reads "
                 "that needs a gradient (parameters too)");
  ProfileRegion region(OpFamily::kGradAccumulate);
  if (grad.defined()) accumulate(leaf.grad, grad.dtype() == leaf.data.dtype() ? grad : grad.to(leaf.data.dtype()));
  if (--counts.pending_leaves[&leaf] == 0 && leaf.grad.defined())
    for (const GradReadyHook& hook : leaf.grad_ready_hooks) hook(leaf.grad);
}

void check_root(const Variable& root, const Tensor& grad) {
  ZT_REQUIRE(root.requires_grad(), "backward on '" + root.name() +
                                       "', which does not require grad: no input of the ops that made it "
                                       "requires grad, or it was computed under NoGradGuard");
  ZT_REQUIRE(grad.defined() && grad.shape() == root.data().shape(),
             "backward: the gradient has shape " + (grad.defined() ? shape_str(grad.shape()) : "undefined") +
                 " but the output '" + root.name() + "' has shape " + shape_str(root.data().shape()));
}

}  // namespace

LeafScope::LeafScope(const std::vector<Variable>& allowed) : previous_(allowed_leaves) {
  for (const Variable& v : allowed)
    if (v.defined()) allowed_.insert(v.impl().get());
  allowed_leaves = &allowed_;
}

LeafScope::~LeafScope() { allowed_leaves = previous_; }

void run_backward(const std::vector<Variable>& roots, const std::vector<Tensor>& root_grads) {
  ZT_REQUIRE(roots.size() == root_grads.size(), "backward: one gradient per output is needed");
  NoGradGuard no_recording;  // backward computations are not themselves recorded
  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  std::vector<Node*> starts;
  for (std::size_t i = 0; i < roots.size(); ++i) {
    check_root(roots[i], root_grads[i]);
    if (Node* node = roots[i].grad_fn().get()) {
      auto& buffer = buffers[node];
      buffer.resize(node->outputs().size());
      accumulate(buffer[roots[i].impl()->output_index], root_grads[i]);
      starts.push_back(node);
    }
  }
  GraphCounts counts = count_dependencies(starts);
  for (std::size_t i = 0; i < roots.size(); ++i)
    if (roots[i].is_leaf()) {
      ++counts.pending_leaves[roots[i].impl().get()];
      deliver_to_leaf(*roots[i].impl(), root_grads[i], counts);
    }
  std::vector<std::shared_ptr<Node>> ready;
  for (std::size_t i = 0; i < roots.size(); ++i)
    if (roots[i].grad_fn() && counts.pending_inputs[roots[i].grad_fn().get()] == 0) ready.push_back(roots[i].grad_fn());
  std::unordered_set<Node*> done;
  while (!ready.empty()) {
    std::shared_ptr<Node> node = ready.back();
    ready.pop_back();
    if (!done.insert(node.get()).second) continue;
    std::vector<Tensor> grads = node->apply(std::move(buffers[node.get()]));
    buffers.erase(node.get());
    for (std::size_t k = 0; k < node->inputs().size(); ++k) {
      const Edge& edge = node->inputs()[k];
      if (edge.leaf) deliver_to_leaf(*edge.leaf, grads[k], counts);
      if (!edge.node) continue;
      auto& buffer = buffers[edge.node.get()];
      buffer.resize(edge.node->outputs().size());
      if (grads[k].defined()) {
        ProfileRegion region(OpFamily::kElementwise);
        accumulate(buffer[edge.output_index], grads[k]);
      }
      if (--counts.pending_inputs[edge.node.get()] == 0) ready.push_back(edge.node);
    }
  }
}

}  // namespace zt::autograd
