#include "train/report/train_log.h"

#include <filesystem>

#include "runtime/atomic_file.h"
#include "runtime/error.h"

namespace zt::train {

TrainLogFile::TrainLogFile(const std::string& output_dir, const nlohmann::json& earlier)
    : path_((std::filesystem::path(output_dir) / kFileName).string()) {
  std::filesystem::create_directories(output_dir);
  AtomicFile file(path_);
  for (const nlohmann::json& entry : earlier) file.write(entry.dump() + "\n");
  file.commit();
  out_.open(path_, std::ios::app);
  ZT_REQUIRE(out_.is_open(), path_ + ": cannot be opened for appending the training log");
}

void TrainLogFile::append(const nlohmann::json& entry) {
  out_ << entry.dump() << "\n" << std::flush;
  ZT_REQUIRE(out_.good(), path_ + ": writing the training log failed (disk full?)");
}

}  // namespace zt::train
