// JSON the user wrote (data files, arguments files, DeepSpeed configs, a model's or an
// adapter's config.json, prompt files), parsed with errors people can act on:
// "data.json:3:17: not valid JSON: syntax error while parsing object - unexpected '}'; expected
// string literal", the position counted in lines and characters, never nlohmann's raw
// "[json.exception.parse_error.101] ...".
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "runtime/error.h"

namespace zt {

// The message for `error`, raised parsing `text` (which `source` names): "source:line:column:
// not valid JSON: detail" for a syntax error; "source: not valid JSON: detail" for one without a
// position (a number beyond double's range). `line_in_file` is 0 when `text` is the whole
// file, else the line `text` is (a JSON Lines line parsed on its own).
std::string json_error_message(const nlohmann::json::exception& error, std::string_view text, const std::string& source,
                               std::size_t line_in_file = 0);

// nlohmann's message without its "[json.exception.<kind>.<id>] parse error at ...:" prefix.
std::string json_error_detail(const nlohmann::json::exception& error);

// `text` with Python's NaN, Infinity and -Infinity outside strings as null: json.dumps writes
// them for floats that are not finite (HF's Trainer logs an fp16 overflow's gradient norm as
// Infinity), and JSON lacks them. nlohmann writes such a float as null too.
std::string python_constants_as_null(std::string_view text);

// `text` parsed as Json (nlohmann::json or nlohmann::ordered_json); `callback` as nlohmann's,
// and what it throws passes through. Throws zt::Error with json_error_message's text.
template <typename Json = nlohmann::json>
Json parse_json(std::string_view text, const std::string& source,
                const typename Json::parser_callback_t& callback = nullptr, std::size_t line_in_file = 0) {
  try {
    return Json::parse(text.begin(), text.end(), callback);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for a number like 1e400
    fail(json_error_message(e, text, source, line_in_file));
  }
}

// A number in a message as the user wrote it: 6, not 6.0; 0.1 as JSON writes it, not 0.100000.
std::string number_text(double value);

}  // namespace zt
