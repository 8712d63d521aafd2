// Reading train/checkpoint/optimizer_state_files.h's layout (and the old single optimizer.safetensors):
// each request opens only the files that hold it, through memory maps.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "runtime/error.h"
#include "train/checkpoint/optimizer_state_files.h"

namespace zt::train {
namespace {

namespace fs = std::filesystem;

constexpr const char* kMasterSuffix = ".master";

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() > suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string read_index(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  ZT_REQUIRE(in, "cannot read " + path.string());
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

std::optional<OptimizerStateFiles> OptimizerStateFiles::open(const std::string& checkpoint_dir) {
  if (fs::exists(fs::path(checkpoint_dir) / kOptimizerIndexFile)) return from_index(checkpoint_dir);
  if (fs::exists(fs::path(checkpoint_dir) / kLegacyOptimizerFile)) return from_legacy_file(checkpoint_dir);
  return std::nullopt;
}

OptimizerStateFiles OptimizerStateFiles::from_index(const std::string& checkpoint_dir) {
  OptimizerStateFiles files;
  files.dir_ = checkpoint_dir;
  files.source_ = (fs::path(checkpoint_dir) / kOptimizerIndexFile).string();
  OptimizerIndex index = parse_optimizer_index(read_index(files.source_), files.source_);
  files.step_ = index.step;
  files.parameters_ = std::move(index.parameters);
  return files;
}

// Old checkpoints: one file, each parameter's state whole under "<name>.master" etc.
OptimizerStateFiles OptimizerStateFiles::from_legacy_file(const std::string& checkpoint_dir) {
  OptimizerStateFiles files;
  files.dir_ = checkpoint_dir;
  files.source_ = (fs::path(checkpoint_dir) / kLegacyOptimizerFile).string();
  SafetensorsFile file = SafetensorsFile::open(files.source_);
  const std::size_t suffix = std::string(kMasterSuffix).size();
  for (const std::string& tensor : file.names()) {
    if (!ends_with(tensor, kMasterSuffix)) continue;
    const std::string name = tensor.substr(0, tensor.size() - suffix);
    const Shape& shape = file.info(tensor).shape;
    files.parameters_.emplace(
        name,
        Entry{shape,
              {Piece{0, shape_numel(shape), kLegacyOptimizerFile, tensor, name + ".exp_avg", name + ".exp_avg_sq"}}});
  }
  files.files_.emplace(kLegacyOptimizerFile, std::move(file));
  return files;
}

std::vector<std::string> OptimizerStateFiles::names() const {
  std::vector<std::string> names;
  for (const auto& [name, entry] : parameters_) names.push_back(name);
  return names;
}

const OptimizerStateFiles::Entry& OptimizerStateFiles::entry(const std::string& name) const {
  auto found = parameters_.find(name);
  ZT_REQUIRE(found != parameters_.end(), "the optimizer state of " + source_ + " has no '" + name +
                                             "': the checkpoint was saved for other trainable parameters (another "
                                             "--finetuning_type or model?)");
  return found->second;
}

const Shape& OptimizerStateFiles::shape(const std::string& name) const { return entry(name).shape; }

const SafetensorsFile& OptimizerStateFiles::file(const std::string& relative) const {
  auto found = files_.find(relative);
  if (found != files_.end()) return found->second;
  const std::string path = (fs::path(dir_) / relative).string();
  try {
    return files_.emplace(relative, SafetensorsFile::open(path)).first->second;
  } catch (const Error& error) {
    fail(std::string(error.what()) + " (a file " + source_ +
         " names); the checkpoint is incomplete or damaged: "
         "copy the file back or resume from another checkpoint");
  }
}

// One of a piece's tensors, flat, checked against what the index says it holds.
Tensor OptimizerStateFiles::piece_tensor(const std::string& name, const Piece& piece, const std::string& tensor) const {
  const SafetensorsFile& holder = file(piece.file);
  const std::string where = "optimizer state file " + holder.path() + " (elements [" + std::to_string(piece.begin) +
                            ", " + std::to_string(piece.end) + ") of '" + name + "')";
  ZT_REQUIRE(holder.contains(tensor), where + " holds no tensor '" + tensor + "': the checkpoint is damaged");
  const SafetensorsInfo& info = holder.info(tensor);
  ZT_REQUIRE(info.dtype == DType::kF32, where + ": '" + tensor + "' is " + dtype_name(info.dtype) +
                                            ", expected float32: the checkpoint is damaged");
  ZT_REQUIRE(shape_numel(info.shape) == piece.end - piece.begin,
             where + ": '" + tensor + "' holds " + std::to_string(shape_numel(info.shape)) + " elements, expected " +
                 std::to_string(piece.end - piece.begin) + ": the checkpoint is damaged");
  const Tensor value = holder.get(tensor);
  return value.reshape({value.numel()});
}

std::optional<std::string> OptimizerStateFiles::damage(const std::string& name) const {
  try {
    for (const Piece& piece : entry(name).pieces)
      for (const std::string* tensor : {&piece.master, &piece.exp_avg, &piece.exp_avg_sq})
        piece_tensor(name, piece, *tensor);
  } catch (const Error& error) {
    return error.what();
  }
  return std::nullopt;
}

void OptimizerStateFiles::read_into(const StateSlice& slice) const {
  const Entry& held = entry(slice.name);
  ZT_REQUIRE(held.shape == slice.shape, "the optimizer state of '" + slice.name + "' in " + source_ + " has shape " +
                                            shape_str(held.shape) + " but the parameter has " + shape_str(slice.shape));
  for (const Piece& piece : held.pieces) {
    const std::int64_t from = std::max(piece.begin, slice.begin), to = std::min(piece.end, slice.end);
    if (from >= to) continue;
    for (auto [tensor, view] : {std::pair{&piece.master, slice.master}, std::pair{&piece.exp_avg, slice.exp_avg},
                                std::pair{&piece.exp_avg_sq, slice.exp_avg_sq}})
      view.narrow(0, from - slice.begin, to - from)
          .copy_from(piece_tensor(slice.name, piece, *tensor).narrow(0, from - piece.begin, to - from));
  }
}

Tensor OptimizerStateFiles::master(const std::string& name) const {
  const Entry& held = entry(name);
  if (held.pieces.size() == 1) return piece_tensor(name, held.pieces[0], held.pieces[0].master).view(held.shape);
  Tensor whole = Tensor::empty(held.shape, DType::kF32, Device::cpu());
  Tensor flat = whole.view({whole.numel()});
  for (const Piece& piece : held.pieces)
    flat.narrow(0, piece.begin, piece.end - piece.begin).copy_from(piece_tensor(name, piece, piece.master));
  return whole;
}

}  // namespace zt::train
