// PEFT's `with model.disable_adapter():` for zerotune: while one of these lives, the model's
// forward runs without its LoRA updates and prefix, as the base model it was loaded as. The
// reference model of preference training (train/preference/) is the policy under this scope
// and no gradient, so LoRA and P-Tuning need no second copy of the weights.
#pragma once

#include "models/model.h"

namespace zt::models {

class AdaptersDisabled {
 public:
  explicit AdaptersDisabled(CausalLM& model) : model_(model), was_enabled_(model.adapters_enabled()) {
    model_.set_adapters_enabled(false);
  }
  ~AdaptersDisabled() { model_.set_adapters_enabled(was_enabled_); }
  AdaptersDisabled(const AdaptersDisabled&) = delete;
  AdaptersDisabled& operator=(const AdaptersDisabled&) = delete;

 private:
  CausalLM& model_;
  bool was_enabled_;
};

}  // namespace zt::models
