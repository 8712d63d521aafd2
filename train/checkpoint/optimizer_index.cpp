#include "train/checkpoint/optimizer_index.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "runtime/error.h"

namespace zt::train {
namespace {

// A file the index names must lie inside the checkpoint folder.
bool inside_folder(const std::string& relative) {
  const std::filesystem::path path(relative);
  if (path.empty() || path.is_absolute()) return false;
  for (const std::filesystem::path& part : path)
    if (part == "..") return false;
  return true;
}

// An integer the index wrote; nlohmann would wrap a larger one or convert a float.
std::int64_t whole_number(const nlohmann::json& value) {
  ZT_REQUIRE(value.is_number_integer() && !(value.is_number_unsigned() && value.get<std::uint64_t>() > INT64_MAX),
             "expected an integer, got " + value.dump());
  return value.get<std::int64_t>();
}

// Elements of a tensor of `shape`; a shape that no tensor can have is an error.
std::int64_t element_count(const std::vector<std::int64_t>& shape, const std::string& name) {
  std::int64_t numel = 1;
  for (std::int64_t size : shape)
    ZT_REQUIRE(size >= 0 && !__builtin_mul_overflow(numel, size, &numel),
               "the shape of '" + name + "' has a negative size or too many elements");
  return numel;
}

OptimizerStateEntry read_entry(const std::string& name, const nlohmann::json& described) {
  OptimizerStateEntry entry;
  for (const nlohmann::json& size : described.at("shape")) entry.shape.push_back(whole_number(size));
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
  for (const nlohmann::json& slice : described.at("slices")) {
    OptimizerStatePiece piece{whole_number(slice.at("begin")),        whole_number(slice.at("end")),
                              slice.at("file").get<std::string>(),    slice.at("master").get<std::string>(),
                              slice.at("exp_avg").get<std::string>(), slice.at("exp_avg_sq").get<std::string>()};
    ZT_REQUIRE(inside_folder(piece.file), "names the file '" + piece.file + "' outside the checkpoint folder");
    ranges.emplace_back(piece.begin, piece.end);
    entry.pieces.push_back(std::move(piece));
  }
  const std::string problem = slice_coverage_problem(ranges, element_count(entry.shape, name));
  ZT_REQUIRE(problem.empty(), "its slices of '" + name + "' do not cover it exactly once: " + problem);
  std::sort(entry.pieces.begin(), entry.pieces.end(),
            [](const OptimizerStatePiece& a, const OptimizerStatePiece& b) { return a.begin < b.begin; });
  return entry;
}

}  // namespace

OptimizerIndex parse_optimizer_index(std::string_view text, const std::string& source) {
  const nlohmann::json json = nlohmann::json::parse(text, nullptr, false);
  ZT_REQUIRE(json.is_object(), source + " is not valid JSON: the checkpoint is damaged");
  OptimizerIndex index;
  try {
    index.step = whole_number(json.at("step"));
    ZT_REQUIRE(index.step >= 0, "its step is " + std::to_string(index.step) + ", a count that cannot be negative");
    for (const auto& [name, described] : json.at("parameters").items())
      index.parameters.emplace(name, read_entry(name, described));
  } catch (const std::exception& error) {
    fail(source + " is damaged (" + error.what() + "); resume from another checkpoint");
  }
  return index;
}

std::string slice_coverage_problem(std::vector<std::pair<std::int64_t, std::int64_t>>& ranges, std::int64_t numel) {
  std::sort(ranges.begin(), ranges.end());
  std::int64_t covered = 0;
  for (const auto& [begin, end] : ranges) {
    if (begin != covered || end <= begin)
      return begin < covered ? "elements from " + std::to_string(begin) + " are held twice"
                             : "elements [" + std::to_string(covered) + ", " + std::to_string(begin) + ") are missing";
    covered = end;
  }
  if (covered != numel) return "elements [" + std::to_string(covered) + ", " + std::to_string(numel) + ") are missing";
  return "";
}

}  // namespace zt::train
