// A TensorBoard event file: a TFRecord file of serialized Event protos (tensorboard_event.h)
// named events.out.tfevents.<unix time>.<hostname>.<pid>.<n>, as TensorBoard's own writer
// names it, so that TensorBoard finds it in a folder and orders a folder's files by time. Each
// record is its length (uint64, little endian), the masked CRC-32C of those 8 bytes, the data,
// and the masked CRC-32C of the data. Every record is appended and flushed at once: a run
// killed at any point leaves every event written before it, and a reader skips nothing.
#pragma once

#include <fstream>
#include <string>
#include <string_view>

namespace zt::train {

// One TFRecord record framing `data`.
std::string tfrecord(std::string_view data);

// This machine's host name, as event file names and HF's default logging_dir carry it.
std::string host_name();

class EventFileWriter {
 public:
  // Creates `folder` (and its parents) and a new event file in it, which starts with the
  // file_version event. Throws zt::Error naming the path when it cannot.
  explicit EventFileWriter(const std::string& folder);

  // Appends one serialized Event as a record and flushes it.
  void write(std::string_view event);

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::ofstream out_;
};

}  // namespace zt::train
