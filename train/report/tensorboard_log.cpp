#include "train/report/tensorboard_log.h"

#include <chrono>

#include "train/report/tensorboard_event.h"

namespace zt::train {
namespace {

double now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

}  // namespace

std::string tensorboard_tag(const std::string& key) {
  if (starts_with(key, "eval_")) return "eval/" + key.substr(5);
  if (starts_with(key, "test_")) return "test/" + key.substr(5);
  return "train/" + key;
}

TensorBoardLog::TensorBoardLog(const std::vector<std::string>& folders, const std::string& arguments_json,
                               std::optional<std::int64_t> resumed_step) {
  for (const std::string& folder : folders) files_.emplace_back(folder);
  const double wall_time = now();
  write(text_event(wall_time, 0, "args", arguments_json));
  if (resumed_step) write(session_start_event(wall_time, *resumed_step + 1));
}

void TensorBoardLog::append(const nlohmann::json& entry) {
  const std::int64_t step = entry.value("step", std::int64_t{0});
  const double wall_time = now();
  std::vector<ScalarValue> scalars;
  std::vector<std::string> texts;
  for (const auto& [key, value] : entry.items()) {
    if (key == "step") continue;
    // HF writes ints, floats and bools (a Python int) as scalars, strings as text, and drops the rest.
    if (value.is_number() || value.is_boolean())
      scalars.push_back({tensorboard_tag(key), value.is_boolean() ? float(value.get<bool>()) : value.get<float>()});
    else if (value.is_string())
      texts.push_back(text_event(wall_time, step, tensorboard_tag(key), value.get<std::string>()));
  }
  if (!scalars.empty()) write(scalars_event(wall_time, step, scalars));
  for (const std::string& text : texts) write(text);
}

std::vector<std::string> TensorBoardLog::paths() const {
  std::vector<std::string> paths;
  for (const EventFileWriter& file : files_) paths.push_back(file.path());
  return paths;
}

void TensorBoardLog::write(const std::string& event) {
  for (EventFileWriter& file : files_) file.write(event);
}

}  // namespace zt::train
