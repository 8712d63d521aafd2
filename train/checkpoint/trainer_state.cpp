#include "train/checkpoint/trainer_state.h"

namespace zt::train {
namespace {

template <typename T>
nlohmann::json or_null(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

template <typename T>
std::optional<T> optional_field(const nlohmann::json& json, const char* key) {
  if (!json.contains(key) || json[key].is_null()) return std::nullopt;
  return json[key].get<T>();
}

}  // namespace

nlohmann::json to_json(const TrainerState& s) {
  return {{"best_global_step", or_null(s.best_global_step)},
          {"best_metric", or_null(s.best_metric)},
          {"best_model_checkpoint", or_null(s.best_model_checkpoint)},
          {"epoch", s.epoch},
          {"eval_steps", s.eval_steps},
          {"global_step", s.global_step},
          {"is_hyper_param_search", false},
          {"is_local_process_zero", true},
          {"is_world_process_zero", true},
          {"log_history", s.log_history},
          {"logging_steps", s.logging_steps},
          {"max_steps", s.max_steps},
          {"num_input_tokens_seen", s.num_input_tokens_seen},
          {"num_train_epochs", s.num_train_epochs},
          {"save_steps", s.save_steps},
          {"stateful_callbacks", nlohmann::json::object()},
          {"total_flos", s.total_flos},
          {"train_batch_size", s.train_batch_size},
          {"trial_name", nullptr},
          {"trial_params", nullptr}};
}

TrainerState trainer_state_from_json(const nlohmann::json& json) {
  TrainerState s;
  s.epoch = json.value("epoch", 0.0);
  s.global_step = json.value("global_step", std::int64_t{0});
  s.max_steps = json.value("max_steps", std::int64_t{0});
  s.logging_steps = json.value("logging_steps", std::int64_t{500});
  s.eval_steps = json.value("eval_steps", std::int64_t{500});
  s.save_steps = json.value("save_steps", std::int64_t{500});
  s.train_batch_size = json.value("train_batch_size", std::int64_t{0});
  s.num_train_epochs = json.value("num_train_epochs", 0.0);
  s.num_input_tokens_seen = json.value("num_input_tokens_seen", std::int64_t{0});
  s.total_flos = json.value("total_flos", 0.0);
  if (json.contains("log_history")) s.log_history = json["log_history"];
  s.best_metric = optional_field<double>(json, "best_metric");
  s.best_global_step = optional_field<std::int64_t>(json, "best_global_step");
  s.best_model_checkpoint = optional_field<std::string>(json, "best_model_checkpoint");
  return s;
}

}  // namespace zt::train
