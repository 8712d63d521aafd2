#include "train/checkpoint/trainer_state.h"

#include <cmath>
#include <cstdint>

#include "runtime/error.h"
#include "runtime/json_text.h"

namespace zt::train {
namespace {

template <typename T>
nlohmann::json or_null(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

// The fields of one trainer_state.json: a field that is absent or null takes its default, as
// in HF's TrainerState; one of the wrong type is an error naming the file and the field.
class StateFields {
 public:
  StateFields(const nlohmann::json& json, const std::string& source) : json_(json), source_(source) {
    if (!json_.is_object()) fail("expected a JSON object, got " + std::string(json_.type_name()));
  }

  std::optional<std::int64_t> integer(const char* key) const {
    const nlohmann::json* value = find(key);
    if (value == nullptr) return std::nullopt;
    if (value->is_number_integer() && !(value->is_number_unsigned() && value->get<std::uint64_t>() > INT64_MAX))
      return value->get<std::int64_t>();
    constexpr double kLimit = 9223372036854775808.0;  // 2^63
    if (value->is_number_float() && std::floor(value->get<double>()) == value->get<double>() &&
        std::fabs(value->get<double>()) < kLimit)
      return static_cast<std::int64_t>(value->get<double>());
    fail("'" + std::string(key) + "' must be an integer, got " + value->dump());
  }
  std::optional<double> number(const char* key) const {
    const nlohmann::json* value = find(key);
    if (value == nullptr) return std::nullopt;
    if (!value->is_number())
      fail(std::string("'").append(key).append("' must be a number, got ").append(value->dump()));
    return value->get<double>();
  }
  std::optional<std::string> string(const char* key) const {
    const nlohmann::json* value = find(key);
    if (value == nullptr) return std::nullopt;
    if (!value->is_string()) fail("'" + std::string(key) + "' must be a string, got " + value->dump());
    return value->get<std::string>();
  }
  // A list of objects, each "step" an integer: what the loss curves and the final
  // evaluation read from it.
  nlohmann::json log_history() const {
    const nlohmann::json* value = find("log_history");
    if (value == nullptr) return nlohmann::json::array();
    if (!value->is_array()) fail("'log_history' must be a list of logged entries, got " + value->dump());
    for (const nlohmann::json& entry : *value)
      if (!entry.is_object() || (entry.contains("step") && !entry["step"].is_number_integer()))
        fail("every 'log_history' entry must be an object with an integer \"step\", got " + entry.dump());
    return *value;
  }

 private:
  const nlohmann::json* find(const char* key) const {
    auto found = json_.find(key);
    return found == json_.end() || found->is_null() ? nullptr : &*found;
  }
  [[noreturn]] void fail(const std::string& message) const {
    zt::fail(source_ + ": " + message + "; the checkpoint is damaged, resume from another one");
  }

  const nlohmann::json& json_;
  const std::string& source_;
};

}  // namespace

// transformers reads the file as TrainerState(**fields), so a field its version lacks fails the
// load: best_global_step (added in 4.52) is written only when it has a value, and
// stateful_callbacks (added after 4.40, zerotune saves no callback state) not at all, which
// leaves the file readable by the older versions as well (the newer ones default both).
nlohmann::json to_json(const TrainerState& s) {
  nlohmann::json json = {{"best_metric", or_null(s.best_metric)},
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
                         {"total_flos", s.total_flos},
                         {"train_batch_size", s.train_batch_size},
                         {"trial_name", nullptr},
                         {"trial_params", nullptr}};
  if (s.best_global_step) json["best_global_step"] = *s.best_global_step;
  return json;
}

TrainerState trainer_state_from_json(const nlohmann::json& json, const std::string& source) {
  const StateFields fields(json, source);
  TrainerState s;
  s.epoch = fields.number("epoch").value_or(s.epoch);
  s.global_step = fields.integer("global_step").value_or(s.global_step);
  s.max_steps = fields.integer("max_steps").value_or(s.max_steps);
  s.logging_steps = fields.integer("logging_steps").value_or(s.logging_steps);
  s.eval_steps = fields.integer("eval_steps").value_or(s.eval_steps);
  s.save_steps = fields.integer("save_steps").value_or(s.save_steps);
  s.train_batch_size = fields.integer("train_batch_size").value_or(s.train_batch_size);
  s.num_train_epochs = fields.number("num_train_epochs").value_or(s.num_train_epochs);
  s.num_input_tokens_seen = fields.integer("num_input_tokens_seen").value_or(s.num_input_tokens_seen);
  s.total_flos = fields.number("total_flos").value_or(s.total_flos);
  s.log_history = fields.log_history();
  s.best_metric = fields.number("best_metric");
  s.best_global_step = fields.integer("best_global_step");
  s.best_model_checkpoint = fields.string("best_model_checkpoint");
  return s;
}

TrainerState parse_trainer_state(std::string_view text, const std::string& source) {
  const nlohmann::json json = nlohmann::json::parse(python_constants_as_null(text), nullptr, false);
  if (json.is_discarded()) fail(source + " is not valid JSON: the checkpoint is damaged");
  return trainer_state_from_json(json, source);
}

}  // namespace zt::train
