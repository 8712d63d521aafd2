#include "text/chat_template/python_json.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "runtime/error.h"

#if ZT_HAVE_TEXT
#include <utf8proc.h>
#endif

namespace zt::models {
namespace {

using nlohmann::ordered_json;

// float.__repr__: the shortest digits that read back to the same double, in fixed notation
// for exponents -4..15 and scientific ("1e-05", "1.5e+16") outside.
std::string python_float(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
  const std::string scientific(buffer, result.ptr);  // "-1.2345e-05"
  const std::size_t e = scientific.find('e');
  const bool negative = scientific[0] == '-';
  std::string digits;
  for (std::size_t i = negative ? 1 : 0; i < e; ++i)
    if (scientific[i] != '.') digits += scientific[i];
  const int exponent = std::stoi(scientific.substr(e + 1));
  std::string out = negative ? "-" : "";
  if (exponent < -4 || exponent >= 16) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out.append(".").append(digits, 1);
    char exp_text[16];
    std::snprintf(exp_text, sizeof exp_text, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + exp_text;
  }
  if (exponent < 0) return out + "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
  const auto whole = static_cast<std::size_t>(exponent) + 1;
  if (digits.size() <= whole) return out + digits + std::string(whole - digits.size(), '0') + ".0";
  return out + digits.substr(0, whole) + "." + digits.substr(whole);
}

std::string python_number(const ordered_json& value) {
  if (value.is_number_float()) return python_float(value.get<double>());
  return value.dump();
}

// The JSON string literal json.dumps writes with ensure_ascii=False.
std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
          out += escaped;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

void dumps(const ordered_json& value, int indent, int depth, std::string& out) {
  const bool pretty = indent >= 0;
  auto newline = [&](int level) {
    if (pretty) out.append("\n").append(static_cast<std::size_t>(indent * level), ' ');
  };
  const char* item_separator = pretty ? "," : ", ";
  if (value.is_object() || value.is_array()) {
    if (value.empty()) {
      out += value.is_object() ? "{}" : "[]";
      return;
    }
    out += value.is_object() ? "{" : "[";
    bool first = true;
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (!first) out += item_separator;
      first = false;
      newline(depth + 1);
      if (value.is_object()) out += json_string(it.key()) + ": ";
      dumps(*it, indent, depth + 1, out);
    }
    newline(depth);
    out += value.is_object() ? "}" : "]";
  } else if (value.is_string()) {
    out += json_string(value.get<std::string>());
  } else if (value.is_number()) {
    out += python_number(value);
  } else {
    out += value.dump();  // true, false, null
  }
}

// Decodes one UTF-8 character at s[i] (valid UTF-8, as the JSON parser guarantees).
char32_t next_code_point(const std::string& s, std::size_t& i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char lead = byte(i);
  const int length = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
  char32_t cp = length == 1 ? lead : lead & (0x7F >> length);
  for (int k = 1; k < length; ++k) cp = (cp << 6) | (byte(i + static_cast<std::size_t>(k)) & 0x3F);
  i += static_cast<std::size_t>(length);
  return cp;
}

// str.isprintable() for one non-ASCII character: not a control, format, surrogate, private,
// unassigned or separator character (the space aside).
bool printable(char32_t cp) {
#if ZT_HAVE_TEXT
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS:
      return false;
    default:
      return true;
  }
#else
  return cp >= 0xA1;
#endif
}

// str.__repr__: single quotes unless the text has one and no double quote.
std::string python_string_repr(const std::string& s) {
  const char quote = s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
  std::string out(1, quote);
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t start = i;
    const char32_t cp = next_code_point(s, i);
    char escaped[16];
    if (cp == static_cast<char32_t>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && !printable(cp))) {
      const char* format = cp <= 0xFF ? "\\x%02x" : cp <= 0xFFFF ? "\\u%04x" : "\\U%08x";
      std::snprintf(escaped, sizeof escaped, format, static_cast<unsigned>(cp));
      out += escaped;
    } else {
      out += s.substr(start, i - start);
    }
  }
  return out + quote;
}

}  // namespace

std::string python_json_dumps(const ordered_json& value, int indent) {
  std::string out;
  dumps(value, indent, 0, out);
  return out;
}

std::string python_repr(const ordered_json& value) {
  if (value.is_string()) return python_string_repr(value.get<std::string>());
  if (value.is_boolean()) return value.get<bool>() ? "True" : "False";
  if (value.is_null()) return "None";
  if (value.is_number()) {
    if (!value.is_number_float()) return value.dump();
    const double v = value.get<double>();
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return python_float(v);
  }
  std::string out = value.is_object() ? "{" : "[";
  bool first = true;
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (!first) out += ", ";
    first = false;
    if (value.is_object()) out += python_string_repr(it.key()) + ": ";
    out += python_repr(*it);
  }
  return out + (value.is_object() ? "}" : "]");
}

ordered_json parse_ordered_json(std::string_view text, const std::string& what) {
  ordered_json value = ordered_json::parse(text, nullptr, false);
  ZT_REQUIRE(!value.is_discarded(), what + " is not valid JSON: " + std::string(text.substr(0, 200)));
  return value;
}

}  // namespace zt::models
