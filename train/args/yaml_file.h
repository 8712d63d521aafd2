// YAML arguments files (`zerotune train args.yaml`), read as HfArgumentParser.parse_yaml_file
// and LLaMA-Factory read them: one document, YAML 1.1 scalars as PyYAML's safe_load resolves
// them (true/false/yes/no/on/off, null/~, ints in every base, floats such as 1.0e-4; a bare
// 1e-4 stays text, as in PyYAML), nested maps and lists, anchors, aliases and `<<` merges.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace zt::train {

// The document as JSON. A pure function of the text, so it can be fuzzed; a syntax error, a
// second document, a tag safe_load would not construct, or a document too deep or too large
// (alias expansion) throws zt::Error naming `source`, the line and the column.
nlohmann::json parse_yaml(std::string_view text, const std::string& source);

}  // namespace zt::train
