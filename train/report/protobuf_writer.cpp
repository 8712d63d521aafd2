#include "train/report/protobuf_writer.h"

#include <bit>

namespace zt::train {

void ProtoWriter::tag(int field, int wire_type) {
  raw_varint((static_cast<std::uint64_t>(field) << 3) | static_cast<std::uint64_t>(wire_type));
}

// Seven bits a byte, lowest first; the top bit says another byte follows.
void ProtoWriter::raw_varint(std::uint64_t value) {
  while (value >= 0x80) {
    data_.push_back(static_cast<char>((value & 0x7F) | 0x80));
    value >>= 7;
  }
  data_.push_back(static_cast<char>(value));
}

template <typename T>
void ProtoWriter::little_endian(T bits) {
  for (std::size_t i = 0; i < sizeof(T); ++i) data_.push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
}

ProtoWriter& ProtoWriter::varint(int field, std::uint64_t value) {
  tag(field, kVarint);
  raw_varint(value);
  return *this;
}

ProtoWriter& ProtoWriter::fixed64(int field, double value) {
  tag(field, kFixed64);
  little_endian(std::bit_cast<std::uint64_t>(value));
  return *this;
}

ProtoWriter& ProtoWriter::fixed32(int field, float value) {
  tag(field, kFixed32);
  little_endian(std::bit_cast<std::uint32_t>(value));
  return *this;
}

ProtoWriter& ProtoWriter::bytes(int field, std::string_view value) {
  tag(field, kLengthDelimited);
  raw_varint(value.size());
  data_.append(value);
  return *this;
}

}  // namespace zt::train
