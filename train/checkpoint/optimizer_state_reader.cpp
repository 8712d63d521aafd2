// Reading train/checkpoint/optimizer_state_files.h's layout (and the old single optimizer.safetensors):
// each request opens only the files that hold it, through memory maps.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "runtime/error.h"
#include "train/checkpoint/optimizer_state_files.h"

namespace zt::train {
namespace {

namespace fs = std::filesystem;

constexpr const char* kMasterSuffix = ".master";

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() > suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A file the index names must lie inside the checkpoint folder.
bool inside_folder(const std::string& relative) {
  const fs::path path(relative);
  if (path.empty() || path.is_absolute()) return false;
  for (const fs::path& part : path)
    if (part == "..") return false;
  return true;
}

nlohmann::json read_index(const fs::path& path) {
  std::ifstream in(path);
  ZT_REQUIRE(in, "cannot read " + path.string());
  nlohmann::json index = nlohmann::json::parse(in, nullptr, false);
  ZT_REQUIRE(index.is_object(), path.string() + " is not valid JSON: the checkpoint is damaged");
  return index;
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
  const nlohmann::json index = read_index(files.source_);
  try {
    files.step_ = index.at("step").get<std::int64_t>();
    for (const auto& [name, described] : index.at("parameters").items()) {
      Entry entry{described.at("shape").get<Shape>(), {}};
      std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
      for (const nlohmann::json& slice : described.at("slices")) {
        Piece piece{slice.at("begin").get<std::int64_t>(),  slice.at("end").get<std::int64_t>(),
                    slice.at("file").get<std::string>(),    slice.at("master").get<std::string>(),
                    slice.at("exp_avg").get<std::string>(), slice.at("exp_avg_sq").get<std::string>()};
        ZT_REQUIRE(inside_folder(piece.file), "names the file '" + piece.file + "' outside the checkpoint folder");
        ranges.emplace_back(piece.begin, piece.end);
        entry.pieces.push_back(std::move(piece));
      }
      const std::string problem = slice_coverage_problem(ranges, shape_numel(entry.shape));
      ZT_REQUIRE(problem.empty(), "its slices of '" + name + "' do not cover it exactly once: " + problem);
      std::sort(entry.pieces.begin(), entry.pieces.end(),
                [](const Piece& a, const Piece& b) { return a.begin < b.begin; });
      files.parameters_.emplace(name, std::move(entry));
    }
  } catch (const std::exception& error) {
    fail(files.source_ + " is damaged (" + error.what() + "); resume from another checkpoint");
  }
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
