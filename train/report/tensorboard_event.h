// TensorBoard's Event protocol buffers (tensorboard/compat/proto/event.proto, summary.proto,
// tensor.proto), serialized by hand through ProtoWriter: the events zerotune writes into an
// event file (event_file_writer.h). Each function returns one serialized Event.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zt::train {

// The first event of every file: file_version "brain.Event:2", by which readers recognise an
// event file, and the writer's name in source_metadata.
std::string file_version_event(double wall_time);

// One Summary of scalars at `step`, each Value a tag and a simple_value (a float32), as
// torch's SummaryWriter.add_scalar writes them.
struct ScalarValue {
  std::string tag;
  float value = 0.0f;
};
std::string scalars_event(double wall_time, std::int64_t step, const std::vector<ScalarValue>& values);

// A text summary, as SummaryWriter.add_text writes one: the tag `tag` + "/text_summary", the
// text plugin's metadata, and the text as a DT_STRING tensor of one element.
std::string text_event(double wall_time, std::int64_t step, const std::string& tag, const std::string& text);

// SessionLog START at `step`: a run resumed from step S writes it at S + 1, and TensorBoard's
// reader then drops the events at S + 1 and later that an earlier run of the same folder wrote
// before it stopped, as it does for a restarted TensorFlow job.
std::string session_start_event(double wall_time, std::int64_t step);

}  // namespace zt::train
