// Writing train/checkpoint/optimizer_state_files.h's layout: each rank's slices, then the main rank's index.
#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "runtime/atomic_file.h"
#include "runtime/error.h"
#include "train/checkpoint/optimizer_state_files.h"

namespace zt::train {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSlicesKey = "slices";  // a rank file's metadata: its shapes and ranges, as JSON

std::string five_digits(int n) {
  std::string digits = std::to_string(n);
  return std::string(digits.size() < 5 ? 5 - digits.size() : 0, '0') + digits;
}

// The slices a rank file says it holds, checked against the tensors it really holds.
nlohmann::ordered_json described_slices(const SafetensorsFile& file) {
  auto found = file.metadata().find(kSlicesKey);
  ZT_REQUIRE(found != file.metadata().end(),
             file.path() + " has no '" + kSlicesKey + "' metadata: it is not a zerotune optimizer state file");
  nlohmann::ordered_json slices = nlohmann::ordered_json::parse(found->second, nullptr, false);
  ZT_REQUIRE(slices.is_object(), file.path() + ": its '" + kSlicesKey + "' metadata is not a JSON object");
  for (const auto& [name, slice] : slices.items())
    for (const char* suffix : {".master", ".exp_avg", ".exp_avg_sq"}) {
      const std::string tensor = name + suffix;
      ZT_REQUIRE(file.contains(tensor), file.path() + " describes a slice of '" + name + "' but holds no " + tensor);
      const auto numel = static_cast<std::int64_t>(file.info(tensor).nbytes() / 4);
      ZT_REQUIRE(numel == slice.at("end").get<std::int64_t>() - slice.at("begin").get<std::int64_t>(),
                 file.path() + ": " + tensor + " holds " + std::to_string(numel) + " elements, not the range " +
                     slice.dump() + " it describes");
    }
  return slices;
}

}  // namespace

std::string state_file_name(int rank, int world_size) {
  return std::string(kOptimizerFolder) + "/rank-" + five_digits(rank) + "-of-" + five_digits(world_size) +
         ".safetensors";
}

std::string write_state_slices(const std::string& checkpoint_dir, int rank, int world_size,
                               const std::vector<StateSlice>& slices) {
  const fs::path path = fs::path(checkpoint_dir) / state_file_name(rank, world_size);
  std::error_code error;
  fs::create_directories(path.parent_path(), error);  // other ranks may be creating it too
  ZT_REQUIRE(fs::is_directory(path.parent_path()), "rank " + std::to_string(rank) + ": cannot create " +
                                                       path.parent_path().string() + ": " + error.message());
  NamedTensors tensors;
  nlohmann::json described = nlohmann::json::object();
  for (const StateSlice& slice : slices) {
    ZT_REQUIRE(!described.contains(slice.name), "rank " + std::to_string(rank) + " holds two slices of '" + slice.name +
                                                    "'; its optimizer state cannot be saved by name");
    described[slice.name] = {{"shape", slice.shape}, {"begin", slice.begin}, {"end", slice.end}};
    tensors.emplace_back(slice.name + ".master", slice.master);
    tensors.emplace_back(slice.name + ".exp_avg", slice.exp_avg);
    tensors.emplace_back(slice.name + ".exp_avg_sq", slice.exp_avg_sq);
  }
  save_safetensors(path.string(), tensors,
                   {{"format", "zerotune optimizer slices"},
                    {"rank", std::to_string(rank)},
                    {"world_size", std::to_string(world_size)},
                    {kSlicesKey, described.dump()}});
  return path.string();
}

void write_state_index(const std::string& checkpoint_dir, const std::vector<int>& writers, const StateIndexInfo& info) {
  nlohmann::ordered_json parameters = nlohmann::ordered_json::object();
  std::map<std::string, nlohmann::ordered_json> by_name;  // sorted: the index lists parameters by name
  for (int rank : writers) {
    const std::string relative = state_file_name(rank, info.world_size);
    const SafetensorsFile file = SafetensorsFile::open((fs::path(checkpoint_dir) / relative).string());
    const nlohmann::ordered_json slices = described_slices(file);
    for (const auto& [name, slice] : slices.items()) {
      nlohmann::ordered_json& entry = by_name[name];
      if (entry.is_null()) entry = {{"shape", slice.at("shape")}, {"slices", nlohmann::ordered_json::array()}};
      ZT_REQUIRE(entry["shape"] == slice.at("shape"), relative + " gives '" + name + "' the shape " +
                                                          slice.at("shape").dump() + ", another rank file " +
                                                          entry["shape"].dump());
      entry["slices"].push_back(nlohmann::ordered_json{{"begin", slice.at("begin")},
                                                       {"end", slice.at("end")},
                                                       {"file", relative},
                                                       {"master", name + ".master"},
                                                       {"exp_avg", name + ".exp_avg"},
                                                       {"exp_avg_sq", name + ".exp_avg_sq"}});
    }
  }
  for (auto& [name, entry] : by_name) {
    std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
    for (const auto& slice : entry["slices"])
      ranges.emplace_back(slice["begin"].get<std::int64_t>(), slice["end"].get<std::int64_t>());
    const std::string problem = slice_coverage_problem(ranges, shape_numel(entry["shape"].get<Shape>()));
    ZT_REQUIRE(problem.empty(), "the ranks' optimizer state files of " + checkpoint_dir + " do not cover '" + name +
                                    "' exactly once: " + problem);
    std::sort(entry["slices"].begin(), entry["slices"].end(),
              [](const nlohmann::ordered_json& a, const nlohmann::ordered_json& b) { return a["begin"] < b["begin"]; });
    parameters[name] = entry;
  }
  const nlohmann::ordered_json index = {{"format", "zerotune optimizer state"},
                                        {"version", 1},
                                        {"step", info.step},
                                        {"world_size", info.world_size},
                                        {"zero_stage", info.zero_stage},
                                        {"parameters", parameters}};
  write_file_atomically((fs::path(checkpoint_dir) / kOptimizerIndexFile).string(), index.dump(2) + "\n");
}

}  // namespace zt::train
