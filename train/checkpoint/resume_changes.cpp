#include "train/checkpoint/resume_changes.h"

#include <sstream>

namespace zt::train {
namespace {

std::string text(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

std::string product(const RunGeometry& g) {
  return std::to_string(g.micro_batch) + " per device x " + std::to_string(g.accumulation) + " accumulation x " +
         std::to_string(g.world_size) + " rank(s)";
}

// What a new global batch means for the data and the step count, or that nothing changes.
std::string global_batch_effect(const RunGeometry& saved, const ResumePoint& point, const ResumedRun& now) {
  const RunGeometry& g = now.geometry;
  if (g.global_batch() == saved.global_batch())
    return "the global batch stays " + std::to_string(g.global_batch()) + " samples a step (" + product(g) +
           "), so training goes on with the next global batch, as the uninterrupted run would";
  // HF Trainer skips global_step % steps_per_epoch steps of the new batch in epoch
  // global_step / steps_per_epoch.
  const std::int64_t hf_epoch = point.global_step / now.steps_per_epoch;
  const std::int64_t hf_samples = point.global_step % now.steps_per_epoch * g.global_batch();
  return "a step now takes " + std::to_string(g.global_batch()) + " samples instead of " +
         std::to_string(saved.global_batch()) + " (" + product(g) + "). Training goes on after the " +
         std::to_string(point.samples_in_epoch) + " samples of epoch " + std::to_string(point.epoch) +
         " the checkpoint had trained on (HF Trainer counts steps instead and would go on after " +
         std::to_string(hf_samples) + " samples of epoch " + std::to_string(hf_epoch) +
         "), and step numbers go on from " + std::to_string(point.global_step) +
         ", so steps before and after the resume are not the same amount of data";
}

// The accumulation that keeps the checkpoint's global batch at the new per-device batch and
// world size, when there is one.
std::string keeping_hint(const RunGeometry& saved, const RunGeometry& g) {
  const std::int64_t per_step = g.micro_batch * g.world_size;
  if (g.global_batch() == saved.global_batch() || saved.global_batch() % per_step != 0) return "";
  return "; --gradient_accumulation_steps " + std::to_string(saved.global_batch() / per_step) +
         " keeps the global batch of " + std::to_string(saved.global_batch());
}

// The first batch setting that changed says what the new global batch means; the others
// point back to it.
std::string batch_note(const std::string& what, const RunGeometry& saved, const ResumePoint& point,
                       const ResumedRun& now, bool first) {
  const std::string start = "resuming " + point.checkpoint + " " + what + ": ";
  if (first) return start + global_batch_effect(saved, point, now) + keeping_hint(saved, now.geometry);
  return start + "with the change above, " +
         (now.geometry.global_batch() == saved.global_batch()
              ? "the global batch stays " + std::to_string(saved.global_batch()) + " samples a step"
              : "a step takes " + std::to_string(now.geometry.global_batch()) + " samples instead of " +
                    std::to_string(saved.global_batch()));
}

// Why max_steps differs, in the words of the setting the user changed.
std::string length_cause(const RunGeometry& saved, const RunGeometry& g, bool max_steps_given) {
  const std::string steps = std::to_string(g.max_steps), saved_steps = std::to_string(saved.max_steps);
  if (max_steps_given) return "with max_steps " + steps + " where the checkpoint's run had " + saved_steps;
  if (g.num_train_epochs != saved.num_train_epochs)
    return "with num_train_epochs " + text(g.num_train_epochs) + " where the checkpoint's run had " +
           text(saved.num_train_epochs) + ": max_steps " + steps + " instead of " + saved_steps;
  return "with max_steps " + steps + " instead of " + saved_steps + ", num_train_epochs " + text(g.num_train_epochs) +
         " at the new global batch";
}

std::string length_note(const RunGeometry& saved, const ResumePoint& point, const ResumedRun& now) {
  const RunGeometry& g = now.geometry;
  const std::string start = "resuming " + point.checkpoint + " " + length_cause(saved, g, now.max_steps_given);
  if (g.max_steps <= point.global_step)
    return start + ": the checkpoint is at step " + std::to_string(point.global_step) +
           " already, so no step is left to train; the final model is saved as the checkpoint holds it";
  std::string note = start + ": " + std::to_string(g.max_steps - point.global_step) +
                     " steps are left, and the learning-rate schedule is that of a run of " +
                     std::to_string(g.max_steps) + " steps";
  if (now.warmup_steps > 0) note += " (" + std::to_string(now.warmup_steps) + " warm-up steps)";
  return note + " from step " + std::to_string(point.global_step + 1) +
         " on, as HF Trainer re-derives it on resume: the next step trains at learning rate " + text(now.next_lr);
}

}  // namespace

RunGeometry saved_geometry(const TrainerState& state, const nlohmann::json& run_state) {
  // Read for a message only: a field an older checkpoint lacks (or a damaged one holds as
  // something else) is not known.
  auto recorded = [&](const char* key, std::int64_t unknown) {
    const nlohmann::json* value = run_state.contains(key) ? &run_state.at(key) : nullptr;
    return value != nullptr && value->is_number_integer() ? value->get<std::int64_t>() : unknown;
  };
  return {.micro_batch = recorded("micro_batch", state.train_batch_size),
          .accumulation = recorded("gradient_accumulation_steps", 0),
          .world_size = static_cast<int>(recorded("world_size", 0)),
          .max_steps = state.max_steps,
          .num_train_epochs = state.num_train_epochs};
}

std::vector<std::string> resume_change_notes(const RunGeometry& saved, const ResumePoint& point,
                                             const ResumedRun& now) {
  const RunGeometry& g = now.geometry;
  // An older checkpoint records only the per-device batch: the global batch is known only
  // when it records all three.
  RunGeometry known = saved;
  if (known.accumulation == 0) known.accumulation = g.accumulation;
  if (known.world_size == 0) known.world_size = g.world_size;
  std::vector<std::string> notes;
  auto batch = [&](const std::string& what) { notes.push_back(batch_note(what, known, point, now, notes.empty())); };
  if (g.micro_batch != saved.micro_batch)
    batch("with per_device_train_batch_size " + std::to_string(g.micro_batch) + " where it trained with " +
          std::to_string(saved.micro_batch));
  if (saved.accumulation != 0 && g.accumulation != saved.accumulation)
    batch("with gradient_accumulation_steps " + std::to_string(g.accumulation) + " where it trained with " +
          std::to_string(saved.accumulation));
  if (saved.world_size != 0 && g.world_size != saved.world_size)
    batch("on " + std::to_string(g.world_size) + " rank(s) where it trained on " + std::to_string(saved.world_size) +
          " (the optimizer state is read by parameter name into the new partitions)");
  if (g.max_steps != saved.max_steps) notes.push_back(length_note(saved, point, now));
  return notes;
}

}  // namespace zt::train
