// --lr_scheduler_kwargs (HF TrainingArguments.lr_scheduler_kwargs, a JSON object) for an HF
// schedule, read as transformers' get_scheduler hands it on: to the schedule's function as
// keyword arguments (an unknown key is the TypeError Python raises, here an error listing the
// accepted ones), to torch's ReduceLROnPlateau for reduce_lr_on_plateau, and to nothing for
// constant, constant_with_warmup and inverse_sqrt (their keys have no effect in HF's Trainer
// either: a warning says so). Values are checked as the functions check them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "train/optim/lr_scheduler.h"

namespace zt::train {

// Sets `config`'s options for `config.kind` from `kwargs` (an object), `learning_rate` being
// the peak (cosine_with_min_lr's min_lr is a share of it; polynomial's lr_end must be below it).
// Appends one line per problem to `errors` and what has no effect to `warnings`.
void read_lr_scheduler_kwargs(const nlohmann::json& kwargs, double learning_rate, LrScheduleConfig& config,
                              std::vector<std::string>& errors, std::vector<std::string>& warnings);

// What the resolved schedule does that its user may not expect: warmup_stable_decay's phases
// not adding up to the training steps, as transformers warns.
std::vector<std::string> lr_schedule_warnings(const LrScheduleConfig& config);

}  // namespace zt::train
