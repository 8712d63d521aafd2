// Reading TensorBoard event files back in the tests, written apart from zerotune's writer so
// that the two check each other: the TFRecord framing with both CRCs of every record (CRC-32C
// computed bit by bit here, not through the writer's table), and a protobuf decoder of the
// Event fields zerotune writes. A malformed file fails the calling test through ADD_FAILURE.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace zt::testing {

struct ReadValue {
  std::string tag;
  std::optional<float> simple_value;
  std::optional<std::string> plugin_name;
  std::vector<std::string> strings;  // TensorProto.string_val
  std::optional<std::uint64_t> dtype;
};

struct ReadEvent {
  double wall_time = 0;
  std::int64_t step = 0;
  std::optional<std::string> file_version;
  std::optional<std::string> source_writer;
  std::optional<std::uint64_t> session_status;
  std::vector<ReadValue> values;
};

// CRC-32C, one bit at a time (reflected polynomial 0x82F63B78).
inline std::uint32_t bitwise_crc32c(const std::string& bytes) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (const char c : bytes) {
    crc ^= static_cast<std::uint8_t>(c);
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1u) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
  }
  return ~crc;
}

inline std::uint32_t masked(std::uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

// A protobuf message's fields in order, each as its number, wire type and payload (a varint's
// value, fixed bytes, or a length-delimited slice).
class ProtoFields {
 public:
  explicit ProtoFields(std::string bytes) : bytes_(std::move(bytes)) {}

  struct Field {
    int number = 0;
    int wire_type = 0;
    std::uint64_t varint = 0;
    std::string payload;  // fixed32/fixed64 bytes, or the length-delimited bytes
  };

  bool next(Field& field) {
    if (at_ >= bytes_.size()) return false;
    const std::uint64_t key = varint();
    field = {static_cast<int>(key >> 3), static_cast<int>(key & 7), 0, ""};
    switch (field.wire_type) {
      case 0:
        field.varint = varint();
        break;
      case 1:
        field.payload = take(8);
        break;
      case 2:
        field.payload = take(varint());
        break;
      case 5:
        field.payload = take(4);
        break;
      default:
        ADD_FAILURE() << "wire type " << field.wire_type << " of field " << field.number;
        at_ = bytes_.size();
        return false;
    }
    return true;
  }

 private:
  std::uint64_t varint() {
    std::uint64_t value = 0;
    for (int shift = 0; at_ < bytes_.size() && shift < 64; shift += 7) {
      const auto byte = static_cast<std::uint8_t>(bytes_[at_++]);
      value |= std::uint64_t{byte & 0x7Fu} << shift;
      if ((byte & 0x80) == 0) return value;
    }
    ADD_FAILURE() << "a varint runs past its message";
    return value;
  }
  std::string take(std::uint64_t count) {
    if (count > bytes_.size() - at_) {
      ADD_FAILURE() << "a field of " << count << " bytes runs past its message";
      at_ = bytes_.size();
      return "";
    }
    std::string out = bytes_.substr(at_, count);
    at_ += count;
    return out;
  }

  std::string bytes_;
  std::size_t at_ = 0;
};

template <typename T>
T from_little_endian(const std::string& bytes) {
  T value{};
  std::memcpy(&value, bytes.data(), sizeof(T));  // the tests run on little-endian machines
  return value;
}

// The records of a TFRecord file, each checked against its two masked CRCs.
inline std::vector<std::string> read_records(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream all;
  all << in.rdbuf();
  const std::string file = all.str();
  std::vector<std::string> records;
  std::size_t at = 0;
  while (at < file.size()) {
    if (file.size() - at < 12) {
      ADD_FAILURE() << path << ": " << file.size() - at << " trailing bytes, too few for a record header";
      break;
    }
    const std::string header = file.substr(at, 8);
    const auto length = from_little_endian<std::uint64_t>(header);
    EXPECT_EQ(from_little_endian<std::uint32_t>(file.substr(at + 8, 4)), masked(bitwise_crc32c(header)))
        << path << ": header CRC of the record at byte " << at;
    if (file.size() - at - 12 < length + 4) {
      ADD_FAILURE() << path << ": the record at byte " << at << " says " << length << " bytes; the file is shorter";
      break;
    }
    const std::string data = file.substr(at + 12, length);
    EXPECT_EQ(from_little_endian<std::uint32_t>(file.substr(at + 12 + length, 4)), masked(bitwise_crc32c(data)))
        << path << ": data CRC of the record at byte " << at;
    records.push_back(data);
    at += 12 + length + 4;
  }
  return records;
}

inline ReadValue decode_value(const std::string& bytes) {
  ReadValue value;
  ProtoFields fields(bytes);
  for (ProtoFields::Field f; fields.next(f);) {
    if (f.number == 1 && f.wire_type == 2) value.tag = f.payload;
    if (f.number == 2 && f.wire_type == 5) value.simple_value = from_little_endian<float>(f.payload);
    if (f.number == 9 && f.wire_type == 2) {  // SummaryMetadata.plugin_data.plugin_name
      ProtoFields metadata(f.payload);
      for (ProtoFields::Field m; metadata.next(m);)
        if (m.number == 1 && m.wire_type == 2) {
          ProtoFields plugin(m.payload);
          for (ProtoFields::Field p; plugin.next(p);)
            if (p.number == 1 && p.wire_type == 2) value.plugin_name = p.payload;
        }
    }
    if (f.number == 8 && f.wire_type == 2) {  // TensorProto: dtype, string_val
      ProtoFields tensor(f.payload);
      for (ProtoFields::Field t; tensor.next(t);) {
        if (t.number == 1 && t.wire_type == 0) value.dtype = t.varint;
        if (t.number == 8 && t.wire_type == 2) value.strings.push_back(t.payload);
      }
    }
  }
  return value;
}

inline ReadEvent decode_event(const std::string& bytes) {
  ReadEvent event;
  ProtoFields fields(bytes);
  for (ProtoFields::Field f; fields.next(f);) {
    if (f.number == 1 && f.wire_type == 1) event.wall_time = from_little_endian<double>(f.payload);
    if (f.number == 2 && f.wire_type == 0) event.step = static_cast<std::int64_t>(f.varint);
    if (f.number == 3 && f.wire_type == 2) event.file_version = f.payload;
    if (f.number == 5 && f.wire_type == 2) {
      ProtoFields summary(f.payload);
      for (ProtoFields::Field v; summary.next(v);)
        if (v.number == 1 && v.wire_type == 2) event.values.push_back(decode_value(v.payload));
    }
    if (f.number == 7 && f.wire_type == 2) {
      ProtoFields session(f.payload);
      for (ProtoFields::Field s; session.next(s);)
        if (s.number == 1 && s.wire_type == 0) event.session_status = s.varint;
    }
    if (f.number == 10 && f.wire_type == 2) {
      ProtoFields source(f.payload);
      for (ProtoFields::Field s; source.next(s);)
        if (s.number == 1 && s.wire_type == 2) event.source_writer = s.payload;
    }
  }
  return event;
}

inline std::vector<ReadEvent> read_events(const std::filesystem::path& path) {
  std::vector<ReadEvent> events;
  for (const std::string& record : read_records(path)) events.push_back(decode_event(record));
  return events;
}

// The event files in `folder`, in name order (TensorBoard's reading order).
inline std::vector<std::filesystem::path> event_files(const std::filesystem::path& folder) {
  std::vector<std::filesystem::path> files;
  if (!std::filesystem::is_directory(folder)) return files;
  for (const auto& entry : std::filesystem::directory_iterator(folder))
    if (entry.path().filename().string().rfind("events.out.tfevents.", 0) == 0) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace zt::testing
