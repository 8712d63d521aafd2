// Checkpoints split over several safetensors files, laid out as Hugging Face saves them:
//   model-00001-of-00003.safetensors ... + model.safetensors.index.json
// where the index's "weight_map" says which shard holds each tensor. A checkpoint small
// enough for one shard is a single model.safetensors with no index.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "tensor/safetensors/safetensors.h"

namespace zt {

class SafetensorsCheckpoint {
 public:
  // `path` is an index file, a .safetensors file, or a directory holding either one
  // *.safetensors.index.json or a single *.safetensors. Every shard is opened and checked
  // against the index here, so a missing shard or tensor fails now, naming the file.
  static SafetensorsCheckpoint open(const std::string& path);

  // Shard by shard (in file-name order), each in file order: reading in this order is sequential.
  const std::vector<std::string>& names() const { return names_; }
  bool contains(const std::string& name) const { return shard_of_.count(name) != 0; }
  const SafetensorsInfo& info(const std::string& name) const { return shard(name).info(name); }
  Tensor get(const std::string& name) const { return shard(name).get(name); }  // zero copy
  const SafetensorsFile& shard(const std::string& name) const;
  const std::vector<SafetensorsFile>& shards() const { return shards_; }

 private:
  SafetensorsCheckpoint() = default;
  static SafetensorsCheckpoint open_index(const std::string& index_path);
  void add_shard(SafetensorsFile file, const std::vector<std::string>& names);

  std::string source_;
  std::vector<SafetensorsFile> shards_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, std::size_t> shard_of_;  // name -> position in shards_
};

// Saves `tensors` into `directory` (created if missing) as shards of at most
// `max_shard_bytes` of tensor data each, filled greedily in the order given (a larger tensor
// gets a shard of its own), then the index, last, so an index never names a shard not yet
// written. One shard is saved as <prefix>.safetensors without an index. Each file is written
// atomically; files of an earlier save with the same prefix that the new one does not use
// are removed afterwards. `metadata` goes into every shard. Returns the paths written.
std::vector<std::string> save_sharded_safetensors(const std::string& directory, const NamedTensors& tensors,
                                                  std::size_t max_shard_bytes,
                                                  const std::map<std::string, std::string>& metadata = {},
                                                  const std::string& prefix = "model");

// `items` cut, in order, into shards of at most max_shard_bytes as bytes_of(item) counts them,
// an item larger than that getting a shard of its own: how save_sharded_safetensors fills
// its files.
template <typename Item, typename BytesOf>
std::vector<std::vector<Item>> split_into_shards(const std::vector<Item>& items, std::size_t max_shard_bytes,
                                                 BytesOf&& bytes_of) {
  std::vector<std::vector<Item>> shards;
  std::uint64_t filled = 0;
  for (const Item& item : items) {
    const std::uint64_t bytes = bytes_of(item);
    if (shards.empty() || (filled > 0 && filled + bytes > max_shard_bytes)) {
      shards.emplace_back();
      filled = 0;
    }
    shards.back().push_back(item);
    filled += bytes;
  }
  return shards;
}

}  // namespace zt
