#include "models/parameter_gatherer.h"

#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/node.h"
#include "runtime/generator.h"

namespace zt::models {
namespace {

// Restores the thread's random stream when the scope ends.
class GeneratorStateGuard {
 public:
  GeneratorStateGuard() : saved_(default_generator().state()) {}
  ~GeneratorStateGuard() { default_generator().set_state(saved_); }

 private:
  GeneratorState saved_;
};

// The backward of one gathered module: the module's parameters are whole while this runs.
std::vector<Tensor> recompute_gradients(const autograd::CheckpointFn& fn, const std::vector<Variable>& saved,
                                        GeneratorState forward_rng, const std::vector<Tensor>& grad_outputs) {
  // Fresh leaves over the current values: for a parameter, the whole value just gathered.
  std::vector<Variable> fresh;
  fresh.reserve(saved.size());
  for (const Variable& input : saved)
    fresh.push_back(input.defined() ? Variable(input.data(), input.requires_grad(), input.name()) : Variable());
  std::vector<Variable> outputs;
  {
    GeneratorStateGuard keep_current_stream;
    default_generator().set_state(forward_rng);
    autograd::EnableGradGuard recording;
    outputs = fn(fresh);
  }
  std::vector<Variable> roots;
  std::vector<Tensor> root_grads;
  for (std::size_t i = 0; i < outputs.size(); ++i)
    if (outputs[i].requires_grad()) {
      roots.push_back(outputs[i]);
      root_grads.push_back(grad_outputs[i]);
    }
  autograd::LeafScope only_inputs(fresh);
  if (!roots.empty()) autograd::run_backward(roots, root_grads);
  std::vector<Tensor> grads;
  grads.reserve(fresh.size());
  for (const Variable& v : fresh) grads.push_back(v.defined() ? v.grad() : Tensor());
  return grads;
}

}  // namespace

std::string module_name(const ModuleRef& module) {
  switch (module.kind) {
    case ModuleKind::kEmbedding: return "embedding";
    case ModuleKind::kLayer: return "layer " + std::to_string(module.layer);
    case ModuleKind::kFinalNorm: return "final norm";
    case ModuleKind::kLmHead: return "LM head";
    case ModuleKind::kPrefixEncoder: return "prefix encoder";
  }
  return "module";
}

GatheredModule::GatheredModule(ParameterGatherer* gatherer, const ModuleRef& module)
    : gatherer_(gatherer), module_(module) {
  if (gatherer_) gatherer_->gather(module_);
}

GatheredModule::~GatheredModule() {
  if (gatherer_) gatherer_->release(module_);
}

std::vector<Variable> gathered_checkpoint(ParameterGatherer& gatherer, const ModuleRef& module,
                                          const autograd::CheckpointFn& fn, const std::vector<Variable>& inputs) {
  GeneratorState forward_rng = default_generator().state();
  std::vector<Tensor> outputs;
  {
    GatheredModule gathered(&gatherer, module);
    autograd::NoGradGuard no_recording;
    for (const Variable& out : fn(inputs)) outputs.push_back(out.data());
  }
  // Parameters by identity (their values come back with the next gather), activations by value.
  std::vector<Variable> saved;
  saved.reserve(inputs.size());
  for (const Variable& input : inputs) {
    if (!input.defined()) saved.emplace_back();
    else if (input.is_leaf()) saved.push_back(input);
    else saved.emplace_back(input.data(), input.requires_grad(), input.name());
  }
  ParameterGatherer* owner = &gatherer;
  return autograd::record(
      "zero3_" + module_name(module), std::move(outputs), inputs,
      [fn, saved, forward_rng, owner, module](const std::vector<Tensor>& grad_outputs, const std::vector<bool>&) {
        GatheredModule gathered(owner, module);
        return recompute_gradients(fn, saved, forward_rng, grad_outputs);
      });
}

}  // namespace zt::models
