#include "train/optim/update_ahead.h"

#include <map>
#include <string>
#include <utility>

#include "runtime/error.h"
#include "runtime/profile/step_profiler.h"
#include "runtime/streams/current_stream.h"

namespace zt::train {

namespace {

// The spans of each module that reads some, in forward order; nullopt where a parameter is read
// by none of the modules the forward gathers (a P-Tuning prefix encoder's).
std::optional<std::vector<std::pair<models::ModuleRef, std::vector<std::size_t>>>> module_runs(
    const models::CausalLM& model, const std::vector<TrainableParameter>& parameters) {
  std::map<const void*, std::size_t> span_of;
  for (std::size_t i = 0; i < parameters.size(); ++i) span_of[parameters[i].variable.data().data_ptr()] = i;
  std::vector<std::pair<models::ModuleRef, std::vector<std::size_t>>> runs;
  for (const models::ModuleParameters& module : model.modules()) {
    std::vector<std::size_t> spans;
    for (const models::NamedParameter& p : module.parameters) {
      auto found = span_of.find(p.variable.data().data_ptr());
      if (found == span_of.end()) continue;
      spans.push_back(found->second);
      span_of.erase(found);  // a tied weight is read first by the embedding
    }
    if (!spans.empty()) runs.emplace_back(module.module, std::move(spans));
  }
  if (!span_of.empty()) return std::nullopt;
  return runs;
}

}  // namespace

bool UpdateAhead::applies(const models::CausalLM& model, const std::vector<TrainableParameter>& parameters,
                          const OffloadOptions& offload) {
  return model.device().is_cuda() && model.parameter_gatherer() == nullptr && !offload.enabled &&
         module_runs(model, parameters).has_value();
}

UpdateAhead::UpdateAhead(models::CausalLM& model, const std::vector<TrainableParameter>& parameters)
    : model_(model), stream_(Stream::create()) {
  ZT_REQUIRE(model.parameter_gatherer() == nullptr, "optimizer: the model's weights already have a gatherer");
  const auto runs = module_runs(model, parameters);
  ZT_REQUIRE(runs.has_value(), "optimizer: a trainable parameter is read by no module the forward gathers");
  for (const auto& [module, spans] : *runs) runs_.push_back({module, spans, Event(), false});
  model_.set_parameter_gatherer(this);
}

UpdateAhead::~UpdateAhead() {
  settle();
  if (model_.parameter_gatherer() == this) model_.set_parameter_gatherer(nullptr);
}

void UpdateAhead::schedule(const AdamWStepCore::UpdateRun& update) {
  settle();
  if (StepProfiler::active() != nullptr) {
    for (const ModuleRun& run : runs_) update(run.spans);
    return;
  }
  queued_.record(current_stream());
  queued_.wait_on(stream_.get());
  StreamScope on_update_stream(stream_.get());
  for (ModuleRun& run : runs_) {
    update(run.spans);
    run.updated.record(stream_.get());
    run.pending = true;
  }
  in_flight_ = true;
}

void UpdateAhead::after_update(const std::function<void()>& zero) {
  if (!in_flight_) return zero();
  {
    StreamScope on_update_stream(stream_.get());
    zero();
  }
}

void UpdateAhead::settle() {
  if (!in_flight_) return;
  done_.record(stream_.get());  // what was queued so far, the zeroing if it was
  done_.wait_on(current_stream());
  for (ModuleRun& run : runs_) run.pending = false;
  in_flight_ = false;
}

void UpdateAhead::gather(const models::ModuleRef& module) {
  if (!in_flight_) return;
  for (ModuleRun& run : runs_)
    if (run.pending && run.module == module) {
      run.updated.wait_on(current_stream());
      run.pending = false;
    }
}

}  // namespace zt::train
