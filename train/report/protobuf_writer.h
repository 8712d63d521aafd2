// The few pieces of the protocol-buffer wire format that TensorBoard's event files need, so
// that zerotune writes them without a protobuf dependency: each call appends one field (its
// tag, then a varint, a little-endian fixed64/fixed32, or a length-delimited payload) to the
// message being built. proto3 leaves a field at its default out; callers decide that.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace zt::train {

class ProtoWriter {
 public:
  // Wire types (the low three bits of a field's tag).
  static constexpr int kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

  ProtoWriter& varint(int field, std::uint64_t value);    // int32, int64 (two's complement), enum, bool
  ProtoWriter& fixed64(int field, double value);          // double
  ProtoWriter& fixed32(int field, float value);           // float
  ProtoWriter& bytes(int field, std::string_view value);  // string, bytes, and a nested message's bytes
  ProtoWriter& message(int field, const ProtoWriter& nested) { return bytes(field, nested.data()); }

  const std::string& data() const { return data_; }

 private:
  void tag(int field, int wire_type);
  void raw_varint(std::uint64_t value);
  template <typename T>
  void little_endian(T bits);

  std::string data_;
};

}  // namespace zt::train
