// Reading and writing .safetensors files as Tensors. Reading maps the file and hands out CPU
// tensors that view the mapping (zero copy); writing is atomic (runtime/atomic_file.h) and
// lays the file out exactly as the `safetensors` Python package does. docs/SAFETENSORS.md
// has the details; tensor/safetensors/safetensors_format.h the format itself.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tensor/safetensors/safetensors_format.h"
#include "tensor/tensor.h"

namespace zt {

using SafetensorsInfo = safetensors::TensorInfo;
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class SafetensorsFile {
 public:
  // Maps `path` and validates its whole header up front; throws zt::Error naming the file
  // (and tensor) for anything malformed. The file must not be truncated while mapped.
  static SafetensorsFile open(const std::string& path);

  const std::string& path() const { return path_; }
  const std::vector<std::string>& names() const { return names_; }  // in file order
  bool contains(const std::string& name) const { return index_.count(name) != 0; }
  const SafetensorsInfo& info(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return header_.metadata; }

  // A CPU tensor viewing the mapping, which it keeps alive on its own. The memory is
  // read-only (writing into it faults): clone() a tensor before changing it in place. Data
  // not aligned to its dtype (possible only in files from odd writers) is copied instead.
  Tensor get(const std::string& name) const;

  // Where the mapping starts and how long it is (tests use this to check zero copy).
  const void* mapping_data() const;
  std::size_t mapping_size() const;

 private:
  struct Mapping;
  SafetensorsFile() = default;

  std::string path_;
  std::shared_ptr<Mapping> mapping_;
  safetensors::Header header_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, std::size_t> index_;  // name -> position in header_.tensors
};

// Writes `tensors` (any device, dtype, strides) to `path` atomically, laid out as the Python
// package lays it out. Refuses undefined tensors and duplicate names.
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// "'a', 'b', 'c' and 12 more": a short sample of names for error messages.
std::string sample_names(const std::vector<std::string>& names);

}  // namespace zt
