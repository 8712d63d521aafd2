// Writing safetensors files whose tensors are produced one at a time, right before their
// bytes are written and dropped right after, so that a model larger than host memory can be
// written from memory maps, slices assembled on the fly or dtype conversions: at most one
// tensor (and what producing it takes) is held. The files are laid out as
// tensor/safetensors/safetensors.h's save_safetensors and save_sharded_safetensors lay them out.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace zt::train {

struct PlannedTensor {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;
};

// The tensors to write, in order, each with the function that produces it (of the planned
// dtype and shape, which the writer checks; on any device).
class TensorPlan {
 public:
  void add(PlannedTensor tensor, std::function<Tensor()> produce);
  const std::vector<PlannedTensor>& tensors() const { return tensors_; }
  Tensor produce(const std::string& name) const;

 private:
  std::vector<PlannedTensor> tensors_;
  std::map<std::string, std::function<Tensor()>> producers_;
};

// One file, written atomically.
void save_safetensors_streamed(const std::string& path, const TensorPlan& plan,
                               const std::map<std::string, std::string>& metadata = {});

// Shards of at most `max_shard_bytes` of tensor data, filled greedily in the order given (a
// larger tensor gets a shard of its own), named as Hugging Face names them, then the index
// (`<prefix>.safetensors.index.json`), last; a single shard is `<prefix>.safetensors` without
// an index. Files of an earlier save with the same prefix that this one does not use are
// removed afterwards. Returns the paths written.
std::vector<std::string> save_sharded_safetensors_streamed(const std::string& directory, const TensorPlan& plan,
                                                           std::size_t max_shard_bytes,
                                                           const std::map<std::string, std::string>& metadata = {},
                                                           const std::string& prefix = "model");

}  // namespace zt::train
