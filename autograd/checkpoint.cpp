#include "autograd/checkpoint.h"

#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/node.h"
#include "runtime/generator.h"

namespace zt::autograd {
namespace {

// Restores the thread's random stream when the scope ends.
class GeneratorStateGuard {
 public:
  GeneratorStateGuard() : saved_(default_generator().state()) {}
  ~GeneratorStateGuard() { default_generator().set_state(saved_); }

 private:
  GeneratorState saved_;
};

std::vector<Tensor> recompute_gradients(const CheckpointFn& fn, const std::vector<Variable>& inputs,
                                        GeneratorState forward_rng, const std::vector<Tensor>& grad_outputs) {
  std::vector<Variable> fresh;
  fresh.reserve(inputs.size());
  for (const Variable& input : inputs)
    fresh.push_back(input.defined() ? Variable(input.data(), input.requires_grad(), input.name()) : Variable());
  std::vector<Variable> outputs;
  {
    GeneratorStateGuard keep_current_stream;
    default_generator().set_state(forward_rng);
    EnableGradGuard recording;
    outputs = fn(fresh);
  }
  std::vector<Variable> roots;
  std::vector<Tensor> root_grads;
  for (std::size_t i = 0; i < outputs.size(); ++i)
    if (outputs[i].requires_grad()) {
      roots.push_back(outputs[i]);
      root_grads.push_back(grad_outputs[i]);
    }
  LeafScope only_inputs(fresh);
  if (!roots.empty()) run_backward(roots, root_grads);
  std::vector<Tensor> grads;
  grads.reserve(fresh.size());
  for (const Variable& v : fresh) grads.push_back(v.defined() ? v.grad() : Tensor());
  return grads;
}

// Runs scope.enter now and scope.leave at the end of the C++ scope (both optional).
class ScopeGuard {
 public:
  explicit ScopeGuard(const CheckpointScope& scope) : scope_(scope) {
    if (scope_.enter) scope_.enter();
  }
  ~ScopeGuard() {
    if (scope_.leave) scope_.leave();
  }
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;

 private:
  const CheckpointScope& scope_;
};

std::vector<Variable> record_checkpoint(const CheckpointFn& fn, const std::vector<Variable>& inputs,
                                        const CheckpointScope& scope, bool reread_leaves) {
  GeneratorState forward_rng = default_generator().state();
  std::vector<Tensor> outputs;
  {
    ScopeGuard entered(scope);
    NoGradGuard no_recording;
    for (const Variable& out : fn(inputs)) outputs.push_back(out.data());
  }
  // The closure keeps the inputs' values (not their history): that is all a checkpoint saves;
  // with reread_leaves, parameters are kept by identity, their values read at recompute.
  std::vector<Variable> saved_inputs;
  saved_inputs.reserve(inputs.size());
  for (const Variable& input : inputs) {
    if (!input.defined())
      saved_inputs.emplace_back();
    else if (reread_leaves && input.is_leaf())
      saved_inputs.push_back(input);
    else
      saved_inputs.emplace_back(input.data(), input.requires_grad(), input.name());
  }
  return record(
      scope.name, std::move(outputs), inputs,
      [fn, saved_inputs, forward_rng, scope](const std::vector<Tensor>& grad_outputs, const std::vector<bool>&) {
        ScopeGuard entered(scope);
        return recompute_gradients(fn, saved_inputs, forward_rng, grad_outputs);
      });
}

}  // namespace

std::vector<Variable> checkpoint(const CheckpointFn& fn, const std::vector<Variable>& inputs) {
  return record_checkpoint(fn, inputs, {.name = "checkpoint", .enter = {}, .leave = {}}, false);
}

std::vector<Variable> checkpoint(const CheckpointFn& fn, const std::vector<Variable>& inputs,
                                 const CheckpointScope& scope) {
  return record_checkpoint(fn, inputs, scope, true);
}

}  // namespace zt::autograd
