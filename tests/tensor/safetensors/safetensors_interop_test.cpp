// Interoperability with the Python `safetensors` package, driven by
// tools/safetensors_roundtrip.py (see its header for the commands). With
// ZT_SAFETENSORS_INTEROP_DIR=DIR set:
//   WriteOurs  writes DIR/ours/*.safetensors (and a sharded checkpoint) for Python to check;
//   ReadTheirs reads DIR/theirs/*.safetensors, written by Python, and checks them bit-exactly
//              against DIR/theirs/manifest.json and against the catalogue below.
// Without the variable both skip. The catalogue and its values are defined identically in the
// Python script: change both together.
#include <gtest/gtest.h>

#include <cstring>

#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "tensor/safetensors/safetensors_index.h"
#include "tests/common/safetensors_test_util.h"

namespace zt {
namespace {

using testing::read_bytes;
using testing::tensor_bytes;

std::string interop_dir() {
  const char* dir = std::getenv("ZT_SAFETENSORS_INTEROP_DIR");
  return dir ? dir : "";
}

#define ZT_SKIP_WITHOUT_INTEROP_DIR()                                                                \
  do {                                                                                               \
    if (interop_dir().empty())                                                                       \
      GTEST_SKIP() << "set ZT_SAFETENSORS_INTEROP_DIR (tools/safetensors_roundtrip.py does) to run"; \
  } while (0)

struct CatalogueEntry {
  std::string name;
  DType dtype;
  Shape shape;
  bool transposed;  // written from a transposed (non-contiguous) view
  int salt;
};

// Every dtype in every awkward shape: "F32.scalar", "F32.empty", ..., "BOOL.transposed".
std::vector<CatalogueEntry> catalogue() {
  const DType dtypes[] = {DType::kF32, DType::kF64, DType::kF16, DType::kBF16,
                          DType::kI64, DType::kI32, DType::kU8,  DType::kBool};
  const std::pair<const char*, Shape> shapes[] = {
      {"scalar", {}}, {"empty", {0}}, {"zero_mid", {3, 0, 2}}, {"cube", {3, 5, 7}}, {"transposed", {7, 5}}};
  std::vector<CatalogueEntry> entries;
  for (DType dtype : dtypes)
    for (const auto& [label, shape] : shapes)
      entries.push_back({std::string(safetensors::dtype_code(dtype)) + "." + label, dtype, shape,
                         std::string(label) == "transposed", static_cast<int>(entries.size())});
  return entries;
}

// `value`'s bytes at `out` (this machine is little-endian, as safetensors is).
template <typename T>
void put(void* out, T value) {
  std::memcpy(out, &value, sizeof(T));
}

// Element k (row-major) of an entry, exactly representable in its dtype, stored little-endian.
void store_value(DType dtype, std::int64_t k, int salt, void* out) {
  int u = static_cast<int>((k * 37 + salt * 11) % 256);
  float real = static_cast<float>(u - 128) / 4.0f;
  switch (dtype) {
    case DType::kF32:
      return put(out, real);
    case DType::kF64:
      return put(out, static_cast<double>(real));
    case DType::kF16:
      return put(out, float_to_half_bits(real));
    case DType::kBF16:
      return put(out, float_to_bf16_bits(real));
    case DType::kI64:
      return put(out, (u - 128) * std::int64_t{8589934597});
    case DType::kI32:
      return put(out, static_cast<std::int32_t>((u - 128) * 1000003));
    case DType::kU8:
      return put(out, static_cast<std::uint8_t>(u));
    case DType::kBool:
      return put(out, static_cast<std::uint8_t>(u % 3 == 0));
  }
}

Tensor make_entry(const CatalogueEntry& entry) {
  std::size_t size = dtype_size(entry.dtype);
  Shape stored = entry.transposed ? Shape{entry.shape[1], entry.shape[0]} : entry.shape;
  Tensor tensor = Tensor::empty(stored, entry.dtype);
  auto* bytes = static_cast<char*>(tensor.data_ptr());
  for (std::int64_t k = 0; k < tensor.numel(); ++k) {
    // Stored [rows, cols] holds the logical element (col, row) of the transposed view.
    std::int64_t logical = entry.transposed ? (k % stored[1]) * stored[0] + k / stored[1] : k;
    store_value(entry.dtype, logical, entry.salt, bytes + k * size);
  }
  return entry.transposed ? tensor.transpose(0, 1) : tensor;
}

NamedTensors catalogue_tensors() {
  NamedTensors tensors;
  for (const CatalogueEntry& entry : catalogue()) tensors.emplace_back(entry.name, make_entry(entry));
  return tensors;
}

std::string unhex(const std::string& hex) {
  std::string bytes;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return bytes;
}

TEST(SafetensorsInterop, WriteOurs) {
  ZT_SKIP_WITHOUT_INTEROP_DIR();
  std::string ours = interop_dir() + "/ours";
  std::filesystem::create_directories(ours);
  NamedTensors tensors = catalogue_tensors();
  save_safetensors(ours + "/dtypes.safetensors", tensors, {{"format", "pt"}});
  save_safetensors(ours + "/metadata.safetensors", {{"x", tensors.front().second}},
                   {{"format", "pt"}, {"step", "1200"}, {"note", "caf\xc3\xa9 \"quoted\"\n"}});
  save_sharded_safetensors(ours + "/sharded", tensors, 512, {{"format", "pt"}});
}

void expect_matches_manifest(const std::string& path, const nlohmann::json& expected) {
  SCOPED_TRACE(path);
  auto file = SafetensorsFile::open(path);
  EXPECT_EQ(nlohmann::json(file.metadata()), expected["metadata"]);
  ASSERT_EQ(file.names().size(), expected["tensors"].size());
  for (const auto& [name, want] : expected["tensors"].items()) {
    ASSERT_TRUE(file.contains(name)) << name;
    Tensor tensor = file.get(name);
    EXPECT_EQ(safetensors::dtype_code(tensor.dtype()), want["dtype"].get<std::string>()) << name;
    EXPECT_EQ(tensor.shape(), want["shape"].get<Shape>()) << name;
    EXPECT_EQ(tensor_bytes(tensor), unhex(want["hex"].get<std::string>())) << name;
  }
}

TEST(SafetensorsInterop, ReadTheirs) {
  ZT_SKIP_WITHOUT_INTEROP_DIR();
  std::string theirs = interop_dir() + "/theirs";
  ASSERT_TRUE(std::filesystem::exists(theirs + "/manifest.json")) << "run tools/safetensors_roundtrip.py first";
  auto manifest = nlohmann::json::parse(read_bytes(theirs + "/manifest.json"));
  for (const auto& [file_name, expected] : manifest.items())
    expect_matches_manifest(theirs + "/" + file_name, expected);

  // Python's values are ours, and Python's file is byte for byte the one we write.
  auto python_file = SafetensorsFile::open(theirs + "/dtypes.safetensors");
  NamedTensors tensors = catalogue_tensors();
  for (const auto& [name, tensor] : tensors)
    EXPECT_EQ(tensor_bytes(python_file.get(name)), tensor_bytes(tensor)) << name;
  std::string ours = interop_dir() + "/ours_again.safetensors";
  save_safetensors(ours, tensors, python_file.metadata());
  EXPECT_EQ(read_bytes(ours), read_bytes(theirs + "/dtypes.safetensors"));
}

}  // namespace
}  // namespace zt
