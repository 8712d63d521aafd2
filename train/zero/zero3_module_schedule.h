// The order in which ZeRO-3 gathers modules, learned by watching, so the next ones can be
// prefetched. A pass is one micro-batch's forward and backward (the trainer brackets it with
// begin_pass and end_pass); every pass gathers the same modules in the same order — forward:
// embedding, layers 0..L-1, LM head (the embedding again when tied); backward: layers
// L-1..0 for their recompute — so the pass just recorded is the schedule of the next one.
// The first pass only records. A pass that strays from the schedule (another path through the
// model) stops following it until the next pass; gathers outside a pass (evaluation, saving)
// are neither recorded nor followed.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "models/parameter_gatherer.h"

namespace zt::train {

class ModuleSchedule {
 public:
  void begin_pass();
  void end_pass();  // what this pass gathered becomes the schedule of the next
  // `module` is gathered now: its position in the schedule while the pass follows it, else
  // nullopt.
  std::optional<std::size_t> observe(const models::ModuleRef& module);
  // The modules the schedule gathers after `position`, in order.
  std::span<const models::ModuleRef> after(std::size_t position) const;

 private:
  std::vector<models::ModuleRef> schedule_;   // the last complete pass
  std::vector<models::ModuleRef> recording_;  // this pass so far
  bool in_pass_ = false;
  bool following_ = false;
};

}  // namespace zt::train
