#include "tensor/safetensors/safetensors_index.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "runtime/atomic_file.h"
#include "runtime/error.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

constexpr const char* kIndexSuffix = ".safetensors.index.json";
constexpr const char* kShardSuffix = ".safetensors";

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string read_index_text(const std::string& path) {
  std::error_code error;
  auto size = fs::file_size(path, error);
  if (error) fail("cannot read safetensors index '" + path + "': " + error.message());
  if (size > safetensors::kMaxHeaderBytes)
    fail("safetensors index '" + path + "' is " + std::to_string(size) + " bytes, too large for an index");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) fail("cannot read safetensors index '" + path + "'");
  return text.str();
}

// A directory names its checkpoint by holding exactly one index, or else one safetensors file.
std::string checkpoint_in_directory(const std::string& directory) {
  std::vector<std::string> indexes, files;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(directory, error)) {
    std::string name = entry.path().filename().string();
    if (ends_with(name, kIndexSuffix)) indexes.push_back(entry.path().string());
    if (ends_with(name, kShardSuffix)) files.push_back(entry.path().string());
  }
  if (error) fail("cannot list checkpoint directory '" + directory + "': " + error.message());
  std::sort(indexes.begin(), indexes.end());
  std::sort(files.begin(), files.end());
  if (indexes.size() == 1) return indexes.front();
  if (indexes.size() > 1)
    fail("checkpoint directory '" + directory + "' holds several indexes (" + sample_names(indexes) +
         "); pass the path of the one to load");
  if (files.size() == 1) return files.front();
  if (files.empty())
    fail("checkpoint directory '" + directory + "' holds no *.safetensors file and no *" + kIndexSuffix);
  fail("checkpoint directory '" + directory + "' holds several .safetensors files (" + sample_names(files) +
       ") but no *" + kIndexSuffix + " saying how they belong together; pass one file's path");
}

std::map<std::string, std::vector<std::string>> tensors_by_shard(const safetensors::ShardIndex& index) {
  std::map<std::string, std::vector<std::string>> by_shard;
  for (const auto& [name, shard] : index.weight_map) by_shard[shard].push_back(name);
  return by_shard;
}

std::string shard_file_name(const std::string& prefix, std::size_t number, std::size_t count) {
  auto five_digits = [](std::size_t n) {
    std::string digits = std::to_string(n);
    return std::string(digits.size() < 5 ? 5 - digits.size() : 0, '0') + digits;
  };
  return prefix + "-" + five_digits(number) + "-of-" + five_digits(count) + kShardSuffix;
}

// <prefix>-NNNNN-of-MMMMM.safetensors, as shard_file_name writes it.
bool is_shard_file_name(const std::string& name, const std::string& prefix) {
  std::string suffix = kShardSuffix;
  if (name.size() < prefix.size() + 1 + suffix.size() || name.rfind(prefix + "-", 0) != 0 || !ends_with(name, suffix))
    return false;
  std::string middle = name.substr(prefix.size() + 1, name.size() - prefix.size() - 1 - suffix.size());
  auto digits = [](const std::string& text) {
    return text.size() >= 5 && std::all_of(text.begin(), text.end(), [](char c) { return std::isdigit(c); });
  };
  auto separator = middle.find("-of-");
  return separator != std::string::npos && digits(middle.substr(0, separator)) && digits(middle.substr(separator + 4));
}

// Everything a save could refuse is checked before the first file is written.
void check_savable(const std::string& directory, const NamedTensors& tensors, std::size_t max_shard_bytes,
                   const std::string& prefix) {
  ZT_REQUIRE(max_shard_bytes > 0, "cannot save a checkpoint to '" + directory + "': max_shard_bytes must be > 0");
  ZT_REQUIRE(!prefix.empty() && prefix.find('/') == std::string::npos,
             "cannot save a checkpoint to '" + directory + "': the prefix '" + prefix + "' must be a plain file name");
  std::vector<SafetensorsInfo> entries;
  for (const auto& [name, tensor] : tensors) {
    ZT_REQUIRE(tensor.defined(), "cannot save a checkpoint to '" + directory + "': tensor '" + name + "' is undefined");
    entries.push_back({name, tensor.dtype(), tensor.shape()});
  }
  safetensors::plan_layout(std::move(entries), directory);  // refuses duplicate names
}

void remove_stale_files(const std::string& directory, const std::string& prefix, const std::set<std::string>& written) {
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(directory, error)) {
    std::string name = entry.path().filename().string();
    bool ours = is_shard_file_name(name, prefix) || name == prefix + kShardSuffix || name == prefix + kIndexSuffix;
    if (ours && !written.count(name) && !fs::remove(entry.path(), error)) break;
  }
  if (error)
    fail("saved the checkpoint in '" + directory + "' but removing files of an earlier save failed: " +
         error.message() + "; delete unused " + prefix + "* files by hand");
}

}  // namespace

SafetensorsCheckpoint SafetensorsCheckpoint::open(const std::string& path) {
  std::string target = fs::is_directory(path) ? checkpoint_in_directory(path) : path;
  if (ends_with(target, ".json")) return open_index(target);
  SafetensorsCheckpoint checkpoint;
  checkpoint.source_ = target;
  SafetensorsFile file = SafetensorsFile::open(target);
  std::vector<std::string> names = file.names();
  checkpoint.add_shard(std::move(file), names);
  return checkpoint;
}

SafetensorsCheckpoint SafetensorsCheckpoint::open_index(const std::string& index_path) {
  auto index = safetensors::parse_index(read_index_text(index_path), index_path);
  fs::path directory = fs::path(index_path).parent_path();
  SafetensorsCheckpoint checkpoint;
  checkpoint.source_ = index_path;
  for (const auto& [shard_name, names] : tensors_by_shard(index)) {
    std::string shard_path = (directory / shard_name).string();
    if (!fs::exists(shard_path))
      fail("safetensors index '" + index_path + "' puts " + std::to_string(names.size()) + " tensors (" +
           sample_names(names) + ") in shard '" + shard_name +
           "', which does not exist; the checkpoint is "
           "incomplete: download or copy the missing shard");
    SafetensorsFile file = SafetensorsFile::open(shard_path);
    for (const std::string& name : names)
      if (!file.contains(name))
        fail("safetensors index '" + index_path + "' puts tensor '" + name + "' in shard '" + shard_path +
             "', which does not hold it (it holds " + sample_names(file.names()) +
             "); the index and shards do not belong together: re-download the checkpoint");
    std::vector<std::string> in_file_order;
    for (const std::string& name : file.names())
      if (auto mapped = index.weight_map.find(name); mapped != index.weight_map.end() && mapped->second == shard_name)
        in_file_order.push_back(name);
    checkpoint.add_shard(std::move(file), in_file_order);
  }
  return checkpoint;
}

void SafetensorsCheckpoint::add_shard(SafetensorsFile file, const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    shard_of_.emplace(name, shards_.size());
    names_.push_back(name);
  }
  shards_.push_back(std::move(file));
}

const SafetensorsFile& SafetensorsCheckpoint::shard(const std::string& name) const {
  auto found = shard_of_.find(name);
  if (found == shard_of_.end())
    fail("tensor '" + name + "' is not in checkpoint '" + source_ + "', which holds " + std::to_string(names_.size()) +
         " tensors: " + sample_names(names_));
  return shards_[found->second];
}

std::vector<std::string> save_sharded_safetensors(const std::string& directory, const NamedTensors& tensors,
                                                  std::size_t max_shard_bytes,
                                                  const std::map<std::string, std::string>& metadata,
                                                  const std::string& prefix) {
  check_savable(directory, tensors, max_shard_bytes, prefix);
  std::error_code error;
  fs::create_directories(directory, error);
  if (error) fail("cannot create checkpoint directory '" + directory + "': " + error.message());
  auto shards = split_into_shards(tensors, max_shard_bytes,
                                  [](const std::pair<std::string, Tensor>& named) { return named.second.nbytes(); });
  std::vector<std::string> paths;
  std::set<std::string> written;
  auto save_shard = [&](const std::string& name, const NamedTensors& shard_tensors) {
    paths.push_back((fs::path(directory) / name).string());
    written.insert(name);
    save_safetensors(paths.back(), shard_tensors, metadata);
  };
  if (shards.size() <= 1) {
    save_shard(prefix + kShardSuffix, shards.empty() ? NamedTensors{} : shards.front());
  } else {
    safetensors::ShardIndex index{0, {}};
    for (std::size_t i = 0; i < shards.size(); ++i) {
      std::string name = shard_file_name(prefix, i + 1, shards.size());
      save_shard(name, shards[i]);
      for (const auto& [tensor_name, tensor] : shards[i]) {
        index.weight_map[tensor_name] = name;
        *index.total_size += tensor.nbytes();
      }
    }
    paths.push_back((fs::path(directory) / (prefix + kIndexSuffix)).string());
    written.insert(prefix + kIndexSuffix);
    write_file_atomically(paths.back(), safetensors::serialize_index(index));
  }
  remove_stale_files(directory, prefix, written);
  return paths;
}

}  // namespace zt
