// optimizer_index.json, the table of contents of a checkpoint's optimizer state
// (train/checkpoint/optimizer_state_files.h has the layout): the AdamW step, and for each
// parameter its shape and the slices that hold it. Parsed from text and checked here, without
// opening the rank files, so a damaged or hand-edited index is refused before any is read.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace zt::train {

// Elements [begin, end) of a parameter's flattened state, held in one rank file.
struct OptimizerStatePiece {
  std::int64_t begin = 0, end = 0;
  std::string file;                         // relative to the checkpoint folder
  std::string master, exp_avg, exp_avg_sq;  // tensor names in it
};

struct OptimizerStateEntry {
  std::vector<std::int64_t> shape;
  std::vector<OptimizerStatePiece> pieces;  // by begin, covering the parameter exactly once
};

struct OptimizerIndex {
  std::int64_t step = 0;
  std::map<std::string, OptimizerStateEntry> parameters;
};

// The index in `text`, read from `source`. Throws zt::Error naming `source` when it is not
// JSON, lacks a field or has one of the wrong type, names a file outside the checkpoint
// folder, gives an impossible shape, or its slices do not cover a parameter exactly once.
OptimizerIndex parse_optimizer_index(std::string_view text, const std::string& source);

// What is wrong with `ranges` ([begin, end) pairs) as the slices of a parameter of `numel`
// elements, which they must cover exactly once: empty when nothing is. Sorts them.
std::string slice_coverage_problem(std::vector<std::pair<std::int64_t, std::int64_t>>& ranges, std::int64_t numel);

}  // namespace zt::train
