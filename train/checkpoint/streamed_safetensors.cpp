#include "train/checkpoint/streamed_safetensors.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>

#include "runtime/atomic_file.h"
#include "runtime/error.h"
#include "tensor/safetensors/safetensors_format.h"
#include "tensor/safetensors/safetensors_index.h"

namespace zt::train {
namespace {

namespace fs = std::filesystem;

std::string five_digits(std::size_t n) {
  std::string digits = std::to_string(n);
  return std::string(digits.size() < 5 ? 5 - digits.size() : 0, '0') + digits;
}

std::uint64_t planned_bytes(const PlannedTensor& tensor) {
  return safetensors::tensor_nbytes(tensor.dtype, tensor.shape, tensor.name, "the planned export");
}

// <prefix>-NNNNN-of-MMMMM.safetensors, <prefix>.safetensors or its index: files a save owns.
bool saved_with_prefix(const std::string& name, const std::string& prefix) {
  if (name == prefix + ".safetensors" || name == prefix + ".safetensors.index.json") return true;
  const std::string suffix = ".safetensors";
  if (name.rfind(prefix + "-", 0) != 0 || name.size() < prefix.size() + 1 + suffix.size() ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return false;
  const std::string middle = name.substr(prefix.size() + 1, name.size() - prefix.size() - 1 - suffix.size());
  const std::size_t separator = middle.find("-of-");
  auto digit = [](unsigned char c) { return std::isdigit(c) != 0; };
  return separator != std::string::npos && separator >= 5 &&
         std::all_of(middle.begin(), middle.begin() + static_cast<std::ptrdiff_t>(separator), digit);
}

void remove_stale_files(const std::string& directory, const std::string& prefix, const std::set<std::string>& written) {
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(directory, error)) {
    const std::string name = entry.path().filename().string();
    if (saved_with_prefix(name, prefix) && !written.count(name) && !fs::remove(entry.path(), error)) break;
  }
  ZT_REQUIRE(!error, "saved the model in '" + directory + "' but removing files of an earlier save failed: " +
                         error.message() + "; delete unused " + prefix + "* files by hand");
}

// One shard: `tensors` (a part of the plan) written as save_safetensors lays them out.
void save_part(const std::string& path, const std::vector<PlannedTensor>& tensors, const TensorPlan& plan,
               const std::map<std::string, std::string>& metadata) {
  std::vector<safetensors::TensorInfo> entries;
  for (const PlannedTensor& tensor : tensors) entries.push_back({tensor.name, tensor.dtype, tensor.shape});
  const std::vector<safetensors::TensorInfo> layout = safetensors::plan_layout(std::move(entries), path);
  AtomicFile file(path);
  file.write(safetensors::serialize_header(layout, metadata, path));
  for (const safetensors::TensorInfo& entry : layout) {
    const Tensor value = plan.produce(entry.name);
    ZT_REQUIRE(value.defined() && value.dtype() == entry.dtype && value.shape() == entry.shape,
               "cannot write '" + path + "': tensor '" + entry.name + "' was planned as " + dtype_name(entry.dtype) +
                   " " + shape_str(entry.shape) + " but is " +
                   (value.defined() ? std::string(dtype_name(value.dtype())) + " " + shape_str(value.shape())
                                    : std::string("undefined")));
    const Tensor host = value.device().is_cpu() ? value.contiguous() : value.to(Device::cpu()).contiguous();
    if (host.nbytes() > 0) file.write(host.data_ptr(), host.nbytes());
  }
  file.commit();
}

}  // namespace

void TensorPlan::add(PlannedTensor tensor, std::function<Tensor()> produce) {
  ZT_REQUIRE(producers_.emplace(tensor.name, std::move(produce)).second, "tensor '" + tensor.name + "' planned twice");
  tensors_.push_back(std::move(tensor));
}

Tensor TensorPlan::produce(const std::string& name) const { return producers_.at(name)(); }

void save_safetensors_streamed(const std::string& path, const TensorPlan& plan,
                               const std::map<std::string, std::string>& metadata) {
  save_part(path, plan.tensors(), plan, metadata);
}

std::vector<std::string> save_sharded_safetensors_streamed(const std::string& directory, const TensorPlan& plan,
                                                           std::size_t max_shard_bytes,
                                                           const std::map<std::string, std::string>& metadata,
                                                           const std::string& prefix) {
  ZT_REQUIRE(max_shard_bytes > 0, "cannot save a model to '" + directory + "': max_shard_bytes must be > 0");
  std::error_code error;
  fs::create_directories(directory, error);
  ZT_REQUIRE(!error, "cannot create '" + directory + "': " + error.message());
  const std::vector<std::vector<PlannedTensor>> shards =
      split_into_shards(plan.tensors(), max_shard_bytes, planned_bytes);
  std::vector<std::string> paths;
  std::set<std::string> written;
  safetensors::ShardIndex index{0, {}};
  for (std::size_t i = 0; i < std::max<std::size_t>(shards.size(), 1); ++i) {
    const std::string name =
        shards.size() <= 1 ? prefix + ".safetensors"
                           : prefix + "-" + five_digits(i + 1) + "-of-" + five_digits(shards.size()) + ".safetensors";
    paths.push_back((fs::path(directory) / name).string());
    written.insert(name);
    save_part(paths.back(), shards.empty() ? std::vector<PlannedTensor>{} : shards[i], plan, metadata);
    if (shards.size() <= 1) continue;
    for (const PlannedTensor& tensor : shards[i]) {
      index.weight_map[tensor.name] = name;
      *index.total_size += planned_bytes(tensor);
    }
  }
  if (shards.size() > 1) {
    const std::string name = prefix + ".safetensors.index.json";
    paths.push_back((fs::path(directory) / name).string());
    written.insert(name);
    write_file_atomically(paths.back(), safetensors::serialize_index(index));
  }
  remove_stale_files(directory, prefix, written);
  return paths;
}

}  // namespace zt::train
