#include "train/report/train_log.h"

#include <filesystem>
#include <sstream>

#include "runtime/atomic_file.h"
#include "runtime/error.h"

namespace zt::train {
namespace {

// The lines of `path` that parse and belong to a step up to `last_step`.
std::string lines_up_to(const std::string& path, std::int64_t last_step) {
  std::ifstream in(path);
  std::string kept, line;
  while (std::getline(in, line)) {
    const nlohmann::json entry = nlohmann::json::parse(line, nullptr, false);
    if (entry.is_object() && entry.contains("step") && entry["step"].is_number_integer() &&
        entry["step"].get<std::int64_t>() <= last_step)
      kept += line + "\n";
  }
  return kept;
}

}  // namespace

TrainLogFile::TrainLogFile(const std::string& output_dir, std::optional<std::int64_t> resumed_step)
    : path_((std::filesystem::path(output_dir) / kFileName).string()) {
  std::filesystem::create_directories(output_dir);
  AtomicFile file(path_);
  if (resumed_step) file.write(lines_up_to(path_, *resumed_step));
  file.commit();
  out_.open(path_, std::ios::app);
  ZT_REQUIRE(out_.is_open(), path_ + ": cannot be opened for appending the training log");
}

void TrainLogFile::append(const nlohmann::json& entry) {
  out_ << entry.dump() << "\n" << std::flush;
  ZT_REQUIRE(out_.good(), path_ + ": writing the training log failed (disk full?)");
}

}  // namespace zt::train
