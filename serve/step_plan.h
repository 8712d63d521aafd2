// What the engine loop does between two steps: the requests it adds (under their ids) and
// those it cancels. Under --tp every rank holds a batch of its own over its shard, and the
// ranks meet in the shard's all-reduces every step, so every batch must hold the same
// sequences: rank 0's loop makes the plan from what the HTTP threads submitted and sends it
// (StepBroadcast) before applying it; the other ranks receive and apply it, then step with it.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "distributed/communicator.h"
#include "infer/continuous_batch.h"

namespace zt::serve {

struct StepPlan {
  std::vector<std::pair<std::size_t, infer::GenerationRequest>> added;
  std::vector<std::size_t> cancelled;

  bool empty() const { return added.empty() && cancelled.empty(); }
};

// The plan as text and back, every value exact (seeds are 64-bit, temperatures doubles).
std::string encode_step_plan(const StepPlan& plan);
StepPlan decode_step_plan(const std::string& text);

// Adds and cancels the plan's requests; `refused(id, why)` for an added request the batch
// cannot run (every rank refuses the same ones: the check depends on the request and the
// model's config alone).
void apply_step_plan(StepPlan plan, infer::ContinuousBatch& batch,
                     const std::function<void(std::size_t id, const std::string& why)>& refused);

// Rank 0 sends every plan, an empty one as a keep-alive while idle (a collective that waits
// longer than the communicator's timeout fails), and the end; the other ranks receive them.
class StepBroadcast {
 public:
  StepBroadcast(distributed::Communicator& comm, Device device) : comm_(comm), device_(device) {}

  bool is_root() const { return comm_.rank() == 0; }
  void send(const StepPlan& plan);
  void send_end();
  // The next plan, or nullopt once rank 0 has sent the end.
  std::optional<StepPlan> receive();

 private:
  distributed::Communicator& comm_;
  Device device_;
};

}  // namespace zt::serve
