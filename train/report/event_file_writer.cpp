#include "train/report/event_file_writer.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "runtime/error.h"
#include "train/report/crc32c.h"
#include "train/report/tensorboard_event.h"

namespace zt::train {
namespace {

void append_little_endian(std::string& out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

double seconds_since_epoch() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The <n> of a file name: TensorBoard's writer counts the files a process opens from 0, so two
// writers of one process opened in the same second get different names.
std::string next_file_number() {
  static std::atomic<int> count{0};
  return std::to_string(count++);
}

std::string event_file_name(double now) {
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%010lld", static_cast<long long>(now));
  return std::string("events.out.tfevents.") + seconds + "." + host_name() + "." + std::to_string(getpid()) + "." +
         next_file_number();
}

}  // namespace

std::string tfrecord(std::string_view data) {
  std::string record;
  append_little_endian(record, data.size(), 8);
  append_little_endian(record, masked_crc32c(record), 4);
  record.append(data);
  append_little_endian(record, masked_crc32c(data), 4);
  return record;
}

std::string host_name() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return name;
}

EventFileWriter::EventFileWriter(const std::string& folder) {
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  ZT_REQUIRE(!error, folder + ": cannot create the TensorBoard log folder: " + error.message());
  const double now = seconds_since_epoch();
  path_ = (std::filesystem::path(folder) / event_file_name(now)).string();
  out_.open(path_, std::ios::binary | std::ios::app);
  ZT_REQUIRE(out_.is_open(), path_ + ": cannot be created for TensorBoard events");
  write(file_version_event(now));
}

void EventFileWriter::write(std::string_view event) {
  out_ << tfrecord(event) << std::flush;
  ZT_REQUIRE(out_.good(), path_ + ": writing TensorBoard events failed (disk full?)");
}

}  // namespace zt::train
