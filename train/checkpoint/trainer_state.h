// HF Trainer's trainer_state.json: the fields transformers writes and reads back, with the
// log history of every logged step and evaluation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace zt::train {

struct TrainerState {
  double epoch = 0.0;
  std::int64_t global_step = 0;
  std::int64_t max_steps = 0;
  std::int64_t logging_steps = 500;
  std::int64_t eval_steps = 500;
  std::int64_t save_steps = 500;
  std::int64_t train_batch_size = 0;  // per device, as HF records it
  double num_train_epochs = 0.0;
  std::int64_t num_input_tokens_seen = 0;
  double total_flos = 0.0;
  nlohmann::json log_history = nlohmann::json::array();
  std::optional<double> best_metric;
  std::optional<std::int64_t> best_global_step;
  std::optional<std::string> best_model_checkpoint;
};

nlohmann::json to_json(const TrainerState& state);
// The fields of a trainer_state.json read from `source`, named in errors.
TrainerState trainer_state_from_json(const nlohmann::json& json, const std::string& source = "trainer_state.json");
// The same from the file's text.
TrainerState parse_trainer_state(std::string_view text, const std::string& source);

}  // namespace zt::train
