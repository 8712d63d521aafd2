#include "train/report/tensorboard_destination.h"

#include <cstdlib>
#include <filesystem>

#include "runtime/error.h"
#include "train/report/event_file_writer.h"

namespace zt::train {
namespace {

// DeepSpeed reads the switch as its other sections' switches are read (deepspeed_features.cpp):
// off when absent, null, false, 0, "false", or an "auto" nothing filled.
bool switched_on(const nlohmann::json& block) {
  const auto it = block.find("enabled");
  if (it == block.end() || it->is_null() || *it == false || *it == "auto" || *it == "false") return false;
  return !(it->is_number() && it->get<double>() == 0.0);
}

std::string text_field(const nlohmann::json& block, const char* key, const char* fallback, const std::string& source) {
  const auto it = block.find(key);
  if (it == block.end()) return fallback;
  ZT_REQUIRE(it->is_string(), source + ": tensorboard." + key + " must be a string, got " + it->dump());
  return it->get<std::string>();
}

}  // namespace

std::string default_logging_dir(const std::string& output_dir, std::time_t start) {
  std::tm local{};
  localtime_r(&start, &local);
  char when[32];
  std::strftime(when, sizeof(when), "%b%d_%H-%M-%S", &local);
  return (std::filesystem::path(output_dir) / "runs" / (std::string(when) + "_" + host_name())).string();
}

std::optional<std::string> deepspeed_tensorboard_folder(const nlohmann::json& config, const std::string& source) {
  const auto block = config.find("tensorboard");
  if (block == config.end() || !block->is_object() || !switched_on(*block)) return std::nullopt;
  const std::string output_path = text_field(*block, "output_path", "", source);
  const std::string job_name = text_field(*block, "job_name", "DeepSpeedJobName", source);
  return (std::filesystem::path(output_path) / job_name).string();
}

std::vector<std::string> tensorboard_folders(const TensorBoardRequest& request, std::time_t start) {
  const std::optional<std::string>& deepspeed_folder = request.deepspeed_folder;
  std::vector<std::string> folders;
  if (request.report_to_tensorboard) {
    const char* environment = std::getenv("TENSORBOARD_LOGGING_DIR");
    if (!request.logging_dir.empty())
      folders.push_back(request.logging_dir);
    else if (environment != nullptr && *environment != '\0')
      folders.push_back(environment);
    else
      folders.push_back(default_logging_dir(request.output_dir, start));
  }
  if (deepspeed_folder && (folders.empty() || std::filesystem::weakly_canonical(folders[0]) !=
                                                  std::filesystem::weakly_canonical(*deepspeed_folder)))
    folders.push_back(*deepspeed_folder);
  return folders;
}

}  // namespace zt::train
