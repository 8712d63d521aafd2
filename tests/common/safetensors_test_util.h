// Helpers shared by the safetensors tests: a scratch directory, whole-file I/O, files built
// by hand byte by byte, and tensors with deterministic byte patterns.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/error.h"
#include "tensor/tensor.h"

namespace zt::testing {

// A fresh directory under the system temp dir, removed with everything in it afterwards.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "zt_safetensors_XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string str() const { return path_.string(); }
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(path_)) names.push_back(entry.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  std::filesystem::path path_;
};

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

inline std::string u64_le(std::uint64_t value) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(value >> (8 * i));
  return bytes;
}

// A safetensors file from its header text and data section, padded as the writer pads.
inline std::string safetensors_bytes(std::string header, const std::string& data, bool pad = true) {
  if (pad) header.resize((header.size() + 7) / 8 * 8, ' ');
  return u64_le(header.size()) + header + data;
}

// The bytes of a tensor in row-major order.
inline std::string tensor_bytes(const Tensor& tensor) {
  Tensor host = tensor.to(Device::cpu()).contiguous();
  return std::string(static_cast<const char*>(host.data_ptr()), host.nbytes());
}

// A CPU tensor whose byte k is a function of k and `seed`; booleans get 0 or 1.
inline Tensor patterned(const Shape& shape, DType dtype, unsigned seed) {
  Tensor tensor = Tensor::empty(shape, dtype);
  auto* bytes = static_cast<std::uint8_t*>(tensor.data_ptr());
  for (std::size_t k = 0; k < tensor.nbytes(); ++k) {
    auto value = static_cast<std::uint8_t>(k * 131 + seed * 17 + 7);
    bytes[k] = dtype == DType::kBool ? (value & 1) : value;
  }
  return tensor;
}

// Runs `action`, expecting zt::Error whose message contains every one of `parts`.
template <typename Action>
void expect_error_mentioning(Action action, const std::vector<std::string>& parts) {
  try {
    action();
    ADD_FAILURE() << "expected zt::Error mentioning '" << parts.front() << "'";
  } catch (const Error& e) {
    std::string message = e.what();
    for (const std::string& part : parts)
      EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' missing from: " << message;
  }
}

}  // namespace zt::testing
