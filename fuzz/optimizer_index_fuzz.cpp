// Fuzzes the reading of a checkpoint's optimizer_index.json with arbitrary text. zt::Error is
// the expected rejection; anything else escaping, a sanitizer report, or an accepted index
// whose slices do not cover each parameter exactly once, in order, inside the checkpoint
// folder, is a finding: the resume reads the rank files exactly where the index points.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "train/checkpoint/optimizer_index.h"

namespace zr = zt::train;
using zt::fuzz::require;

namespace {

void check_entry(const zr::OptimizerStateEntry& entry) {
  std::int64_t numel = 1;
  for (std::int64_t size : entry.shape) require(size >= 0 && !__builtin_mul_overflow(numel, size, &numel));
  std::int64_t covered = 0;
  for (const zr::OptimizerStatePiece& piece : entry.pieces) {
    require(piece.begin == covered && piece.end > piece.begin);
    covered = piece.end;
    const std::filesystem::path file(piece.file);
    require(!file.empty() && file.is_relative());
    for (const auto& part : file) require(part != "..");
  }
  require(covered == numel);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = zt::fuzz::as_text(data, size);
  const auto index = zt::fuzz::accepted([&] { return zr::parse_optimizer_index(text, "optimizer_index.json"); });
  if (!index) return 0;
  require(index->step >= 0);
  for (const auto& [name, entry] : index->parameters) check_entry(entry);
  return 0;
}
