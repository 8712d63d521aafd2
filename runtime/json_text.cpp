#include "runtime/json_text.h"

#include <cctype>
#include <cmath>

namespace zt {
namespace {

// The 1-based line and column of the byte at `offset`, columns counted in UTF-8 characters.
std::pair<std::size_t, std::size_t> line_and_column(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line, column = 1;
    } else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {  // not a continuation byte
      ++column;
    }
  }
  return {line, column};
}

}  // namespace

std::string python_constants_as_null(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    bool replaced = false;
    for (std::string_view constant : {"NaN", "Infinity", "-Infinity"}) {
      const std::size_t end = i + constant.size();
      const bool word_ends = end >= text.size() || !std::isalnum(static_cast<unsigned char>(text[end]));
      if (text.substr(i, constant.size()) == constant && word_ends) {
        out += "null";
        i = end - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += c;
  }
  return out;
}

std::string json_error_detail(const nlohmann::json::exception& error) {
  std::string detail = error.what();
  if (detail.rfind("[json.exception.", 0) == 0) detail.erase(0, detail.find("] ") + 2);
  if (detail.rfind("parse error", 0) == 0) {
    const std::size_t colon = detail.find(": ");
    if (colon != std::string::npos) detail.erase(0, colon + 2);
  }
  return detail;
}

std::string json_error_message(const nlohmann::json::exception& error, std::string_view text, const std::string& source,
                               std::size_t line_in_file) {
  const auto* parse_error = dynamic_cast<const nlohmann::json::parse_error*>(&error);
  std::string where = source;
  if (parse_error != nullptr && parse_error->byte > 0) {
    // nlohmann's byte is the 1-based index of the last character read: the offending one.
    const auto [line, column] = line_and_column(text, parse_error->byte - 1);
    where.append(":").append(std::to_string(line_in_file == 0 ? line : line_in_file + line - 1));
    where.append(":").append(std::to_string(column));
  } else if (line_in_file > 0) {
    where.append(":").append(std::to_string(line_in_file));
  }
  return where + ": not valid JSON: " + json_error_detail(error);
}

std::string number_text(double value) {
  if (value == std::floor(value) && std::fabs(value) < 1e15) return std::to_string(static_cast<std::int64_t>(value));
  return nlohmann::json(value).dump();
}

}  // namespace zt
