// Fuzzes the arguments files of `zerotune train` with arbitrary text, read both as JSON and as
// YAML. zt::Error is the expected rejection; anything else escaping, a sanitizer report, or
// accepted arguments that the checkpoint's training_args.json could not record is a finding.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "train/args/training_arguments.h"
#include "train/args/yaml_file.h"

namespace zr = zt::train;
using zt::fuzz::require;

namespace {

// Every checkpoint records the arguments as JSON: that must work for whatever was accepted.
void check_recorded(const zr::TrainingArguments& args) {
  const std::string recorded = zr::training_arguments_json(args);
  require(nlohmann::json::parse(recorded, nullptr, false).is_object());
}

void parse_as(std::string_view text, zr::ArgumentsFileFormat format, const std::string& source) {
  const auto args = zt::fuzz::accepted([&] { return zr::parse_training_arguments_text(text, format, source); });
  if (args) check_recorded(*args);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = zt::fuzz::as_text(data, size);
  // The YAML reader on its own: any document it accepts becomes JSON text.
  if (const auto document = zt::fuzz::accepted([&] { return zr::parse_yaml(text, "args.yaml"); }))
    (void)document->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  parse_as(text, zr::ArgumentsFileFormat::kJson, "args.json");
  parse_as(text, zr::ArgumentsFileFormat::kYaml, "args.yaml");
  return 0;
}
