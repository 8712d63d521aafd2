// JSON values written as Python writes them. The model families' templates print tool
// schemas and call arguments with json.dumps (Jinja's `tojson` as transformers defines it:
// ensure_ascii=False, keys in their order, ", " and ": " between items) and ChatGLM3 its
// tool calls with repr(). The bytes matter: they are what the model was trained on.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace zt::models {

// json.dumps(value, ensure_ascii=False), or with indent=N when indent >= 0.
std::string python_json_dumps(const nlohmann::ordered_json& value, int indent = -1);

// repr() of the Python value that json.loads makes of `value` (True, None, 'text', {'k': 1}).
std::string python_repr(const nlohmann::ordered_json& value);

// `text` parsed with its object keys kept in order; an error naming `what` when it is not JSON.
nlohmann::ordered_json parse_ordered_json(std::string_view text, const std::string& what);

}  // namespace zt::models
