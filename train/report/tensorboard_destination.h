// Where a run's TensorBoard event files go. --report_to tensorboard (or all) writes them into
// --logging_dir; without it, into TENSORBOARD_LOGGING_DIR when set (transformers 5's
// replacement for the flag), else into transformers 4's default folder,
// output_dir/runs/<Mon DD_HH-MM-SS>_<hostname>, a new one for each run. DeepSpeed's
// `tensorboard` block, enabled, writes them into its output_path/job_name, as DeepSpeed's
// TensorBoard monitor does. Both, to two folders, when both ask.
#pragma once

#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace zt::train {

// transformers 4's default logging_dir for a run started at `start` (local time, as
// datetime.now() formats it with "%b%d_%H-%M-%S").
std::string default_logging_dir(const std::string& output_dir, std::time_t start);

// The folder of a DeepSpeed config's enabled `tensorboard` block: output_path joined with
// job_name (DeepSpeed's defaults: "" and "DeepSpeedJobName", the latter in the working
// folder); nullopt without the block or while "enabled" is off. Throws zt::Error for a path or
// name that is not a string.
std::optional<std::string> deepspeed_tensorboard_folder(const nlohmann::json& config, const std::string& source);

// What asks a run for event files: --report_to tensorboard (or all) with --logging_dir, and the
// DeepSpeed config's enabled tensorboard block (train/args/report_to.h resolves them).
struct TensorBoardRequest {
  bool report_to_tensorboard = false;
  std::string logging_dir = {};  // empty: TENSORBOARD_LOGGING_DIR, else the default under output_dir
  std::string output_dir = {};
  std::optional<std::string> deepspeed_folder = std::nullopt;
};

// Every folder the run writes event files into, each once; empty when nothing asks for them.
std::vector<std::string> tensorboard_folders(const TensorBoardRequest& request, std::time_t start);

}  // namespace zt::train
