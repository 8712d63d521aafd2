#include "train/zero/zero3_module_schedule.h"

namespace zt::train {

void ModuleSchedule::begin_pass() {
  in_pass_ = true;
  following_ = !schedule_.empty();
  recording_.clear();
}

void ModuleSchedule::end_pass() {
  if (in_pass_) schedule_ = recording_;
  in_pass_ = false;
  following_ = false;
}

std::optional<std::size_t> ModuleSchedule::observe(const models::ModuleRef& module) {
  if (!in_pass_) return std::nullopt;
  const std::size_t position = recording_.size();
  recording_.push_back(module);
  following_ = following_ && position < schedule_.size() && schedule_[position] == module;
  return following_ ? std::optional(position) : std::nullopt;
}

std::span<const models::ModuleRef> ModuleSchedule::after(std::size_t position) const {
  if (position + 1 >= schedule_.size()) return {};
  return std::span(schedule_).subspan(position + 1);
}

}  // namespace zt::train
