#include "train/report/tensorboard_event.h"

#include "train/report/protobuf_writer.h"

namespace zt::train {
namespace {

// Field numbers of the messages written here.
namespace event {
constexpr int kWallTime = 1, kStep = 2, kFileVersion = 3, kSummary = 5, kSessionLog = 7, kSourceMetadata = 10;
}
namespace summary {
constexpr int kValue = 1;                                              // Summary.value (repeated)
constexpr int kTag = 1, kSimpleValue = 2, kTensor = 8, kMetadata = 9;  // Summary.Value
}  // namespace summary
constexpr int kSourceWriter = 1;                             // SourceMetadata.writer
constexpr int kPluginData = 1, kPluginName = 1;              // SummaryMetadata, PluginData
constexpr int kDtype = 1, kTensorShape = 2, kStringVal = 8;  // TensorProto
constexpr int kShapeDim = 2, kDimSize = 1;                   // TensorShapeProto, its Dim
constexpr int kSessionStatus = 1;                            // SessionLog.status
constexpr std::uint64_t kDtString = 7;                       // DataType.DT_STRING
constexpr std::uint64_t kSessionStart = 1;                   // SessionLog.START

// Event's wall_time and step; step 0, proto3's default, is left out as protobuf leaves it.
ProtoWriter event_at(double wall_time, std::int64_t step) {
  ProtoWriter out;
  out.fixed64(event::kWallTime, wall_time);
  if (step != 0) out.varint(event::kStep, static_cast<std::uint64_t>(step));
  return out;
}

}  // namespace

std::string file_version_event(double wall_time) {
  ProtoWriter source;
  source.bytes(kSourceWriter, "zerotune");
  return event_at(wall_time, 0)
      .bytes(event::kFileVersion, "brain.Event:2")
      .message(event::kSourceMetadata, source)
      .data();
}

std::string scalars_event(double wall_time, std::int64_t step, const std::vector<ScalarValue>& values) {
  ProtoWriter summary;
  for (const ScalarValue& scalar : values) {
    ProtoWriter value;
    value.bytes(summary::kTag, scalar.tag).fixed32(summary::kSimpleValue, scalar.value);
    summary.message(summary::kValue, value);
  }
  return event_at(wall_time, step).message(event::kSummary, summary).data();
}

std::string text_event(double wall_time, std::int64_t step, const std::string& tag, const std::string& text) {
  ProtoWriter plugin, metadata, dim, shape, tensor, value, summary;
  plugin.bytes(kPluginName, "text");  // TextPluginData(version=0) serializes to nothing: no content
  metadata.message(kPluginData, plugin);
  dim.varint(kDimSize, 1);
  shape.message(kShapeDim, dim);
  tensor.varint(kDtype, kDtString).message(kTensorShape, shape).bytes(kStringVal, text);
  value.bytes(summary::kTag, tag + "/text_summary")
      .message(summary::kMetadata, metadata)
      .message(summary::kTensor, tensor);
  summary.message(summary::kValue, value);
  return event_at(wall_time, step).message(event::kSummary, summary).data();
}

std::string session_start_event(double wall_time, std::int64_t step) {
  ProtoWriter session;
  session.varint(kSessionStatus, kSessionStart);
  return event_at(wall_time, step).message(event::kSessionLog, session).data();
}

}  // namespace zt::train
