#include "models/parameter_gatherer.h"

namespace zt::models {

std::string module_name(const ModuleRef& module) {
  switch (module.kind) {
    case ModuleKind::kEmbedding:
      return "embedding";
    case ModuleKind::kLayer:
      return "layer " + std::to_string(module.layer);
    case ModuleKind::kFinalNorm:
      return "final norm";
    case ModuleKind::kLmHead:
      return "LM head";
    case ModuleKind::kPrefixEncoder:
      return "prefix encoder";
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
  ParameterGatherer* owner = &gatherer;
  return autograd::checkpoint(fn, inputs,
                              {.name = "zero3_" + module_name(module),
                               .enter = [owner, module] { owner->gather(module); },
                               .leave = [owner, module] { owner->release(module); }});
}

}  // namespace zt::models
