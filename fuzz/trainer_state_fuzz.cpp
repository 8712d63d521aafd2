// Fuzzes the reading of a checkpoint's trainer_state.json (HF Trainer's fields and log
// history) with arbitrary text, as a resume reads it. zt::Error is the expected rejection;
// anything else escaping, a sanitizer report, or an accepted state that does not read back the
// same after the trainer writes it again is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "train/checkpoint/trainer_state.h"

namespace zr = zt::train;
using zt::fuzz::require;

namespace {

bool same(const zr::TrainerState& a, const zr::TrainerState& b) {
  return a.epoch == b.epoch && a.global_step == b.global_step && a.max_steps == b.max_steps &&
         a.logging_steps == b.logging_steps && a.eval_steps == b.eval_steps && a.save_steps == b.save_steps &&
         a.train_batch_size == b.train_batch_size && a.num_train_epochs == b.num_train_epochs &&
         a.num_input_tokens_seen == b.num_input_tokens_seen && a.total_flos == b.total_flos &&
         a.log_history == b.log_history && a.best_metric == b.best_metric && a.best_global_step == b.best_global_step &&
         a.best_model_checkpoint == b.best_model_checkpoint;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = zt::fuzz::as_text(data, size);
  const auto state = zt::fuzz::accepted([&] { return zr::parse_trainer_state(text, "trainer_state.json"); });
  if (!state) return 0;
  require(state->log_history.is_array());
  const zr::TrainerState again = zr::parse_trainer_state(zr::to_json(*state).dump(2), "trainer_state.json");
  require(same(again, *state));
  return 0;
}
