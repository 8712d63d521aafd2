// The single-device optimizer's update run ahead of the next forward: AdamW module by module,
// in the order the forward reads the modules, on a stream of its own, so that the next step's
// forward starts once the embedding is updated rather than once every parameter is. The
// update reads and writes about 30 bytes a parameter (16 bytes of state read and written, the
// fp32 gradient, the bf16 weight), 9% of a Qwen2.5-1.5B full fine-tuning step at the copy
// rate; here it runs under the forward's GEMMs instead of before them. The gradients are zeroed
// on the same stream after the update, so that pass leaves the step's stream too.
//
// It is the model's ParameterGatherer (models/parameter_gatherer.h), one that gathers nothing:
// gather(module) makes the reading stream wait for that module's update. Backward writes the
// gradients the update reads and zeroes, so it waits for all of it (before_backward), as do
// reads of the weights or state outside a forward (settle). Each module's update is the same
// launches on the same values as the whole update's, so the steps keep their bits.
//
// For a GPU run of the single-device optimizer without offload, on a model with no other
// gatherer (ZeRO-3, the 4-bit base); a profiled step updates in place, so the step profiler's
// marks stay on one stream.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

#include "models/model.h"
#include "runtime/streams/stream.h"
#include "train/optim/adamw_step_core.h"

namespace zt::train {

class UpdateAhead : public models::ParameterGatherer {
 public:
  // `parameters` in the optimizer's span order; every one must be a parameter of `model`.
  UpdateAhead(models::CausalLM& model, const std::vector<TrainableParameter>& parameters);
  ~UpdateAhead() override;
  UpdateAhead(const UpdateAhead&) = delete;
  UpdateAhead& operator=(const UpdateAhead&) = delete;

  // Whether this run can take it: a GPU model with no gatherer of its own, no offload, every
  // parameter read by a module the forward gathers.
  static bool applies(const models::CausalLM& model, const std::vector<TrainableParameter>& parameters,
                      const OffloadOptions& offload);

  // AdamWStepCore's schedule: the modules' runs in forward order, on the update stream after
  // what the step's stream has queued (the gradients, their norm), each run's end recorded.
  // In place, on the step's stream, inside a profiled step.
  void schedule(const AdamWStepCore::UpdateRun& update);
  // `zero` (the gradients' zeroing) after a scheduled update, on its stream; else here.
  void after_update(const std::function<void()>& zero);

  // The current stream waits for everything the last schedule() started.
  void settle();

  void gather(const models::ModuleRef& module) override;
  void release(const models::ModuleRef& /*module*/) override {}
  bool releases_weights() const override { return false; }

 private:
  struct ModuleRun {
    models::ModuleRef module;
    std::vector<std::size_t> spans;
    Event updated;
    bool pending = false;
  };

  models::CausalLM& model_;
  std::vector<ModuleRun> runs_;  // in forward order
  Stream stream_;
  Event queued_;  // what the step's stream had queued when the update started
  Event done_;    // the update and the zeroing
  bool in_flight_ = false;
};

}  // namespace zt::train
