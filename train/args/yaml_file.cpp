#include "train/args/yaml_file.h"

#include <yaml.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <vector>

#include "runtime/error.h"

namespace zt::train {
namespace {

using nlohmann::json;

// Bounds that keep a hostile file from exhausting the stack or memory: nesting, and values
// after alias expansion ("billion laughs").
constexpr std::size_t kMaxDepth = 64;
constexpr std::size_t kMaxValues = std::size_t{1} << 17;

constexpr std::string_view kCoreTag = "tag:yaml.org,2002:";

std::string position(const std::string& source, const yaml_mark_t& mark) {
  return source + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

bool is_digit(char c, int base) {
  if (base == 16) return std::isxdigit(static_cast<unsigned char>(c)) != 0;
  return c >= '0' && c < static_cast<char>('0' + base);
}

// Digits of `base` and underscores, at least one character; the value, or nullopt when the
// text is not that or the value leaves int64.
std::optional<std::uint64_t> digits_value(std::string_view text, int base) {
  if (text.empty()) return std::nullopt;
  std::uint64_t value = 0;
  bool any_digit = false;
  for (char c : text) {
    if (c == '_') continue;
    if (!is_digit(c, base)) return std::nullopt;
    const std::uint64_t digit = std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (std::tolower(c) - 'a' + 10);
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / base) return std::nullopt;
    value = value * base + digit;
    any_digit = true;
  }
  if (!any_digit) return std::nullopt;
  return value;
}

// 190:20:30 style base-60 parts after the first: one digit, or two with the first 0-5.
std::optional<std::uint64_t> sexagesimal_tail(std::string_view text, std::uint64_t value) {
  while (!text.empty()) {
    if (text[0] != ':') return std::nullopt;
    text.remove_prefix(1);
    std::size_t n = 0;
    while (n < text.size() && n < 2 && std::isdigit(static_cast<unsigned char>(text[n]))) ++n;
    if (n == 0 || (n == 2 && text[0] > '5')) return std::nullopt;
    if (value > (std::numeric_limits<std::uint64_t>::max() - 59) / 60) return std::nullopt;
    value = value * 60 + std::stoull(std::string(text.substr(0, n)));
    text.remove_prefix(n);
  }
  return value;
}

// PyYAML's int: 0b1010, 0x1F, 017 (octal), 0, 1_000, 190:20:30, each with an optional sign.
std::optional<std::int64_t> yaml_int(std::string_view text) {
  bool negative = false;
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) negative = text[0] == '-', text.remove_prefix(1);
  std::optional<std::uint64_t> magnitude;
  if (text.rfind("0b", 0) == 0) {
    magnitude = digits_value(text.substr(2), 2);
  } else if (text.rfind("0x", 0) == 0) {
    magnitude = digits_value(text.substr(2), 16);
  } else if (text == "0") {
    magnitude = 0;
  } else if (text.size() > 1 && text[0] == '0') {
    magnitude = digits_value(text.substr(1), 8);
  } else if (!text.empty() && text[0] >= '1' && text[0] <= '9') {
    const std::size_t colon = text.find(':');
    magnitude = digits_value(text.substr(0, colon), 10);
    if (magnitude && colon != std::string_view::npos) magnitude = sexagesimal_tail(text.substr(colon), *magnitude);
  }
  if (!magnitude || *magnitude > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return {};
  return negative ? -static_cast<std::int64_t>(*magnitude) : static_cast<std::int64_t>(*magnitude);
}

// `[0-9_]*` from `i`; returns where it stopped.
std::size_t skip_digits(std::string_view text, std::size_t i) {
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '_')) ++i;
  return i;
}

// An exponent as PyYAML wants it, sign required: e-4, E+10.
bool is_exponent(std::string_view text) {
  return text.size() >= 3 && (text[0] == 'e' || text[0] == 'E') && (text[1] == '-' || text[1] == '+') &&
         skip_digits(text, 2) == text.size() && text.find('_', 2) == std::string_view::npos;
}

double decimal_value(std::string_view text) {
  std::string cleaned;
  for (char c : text)
    if (c != '_') cleaned += c;
  return std::strtod(cleaned.c_str(), nullptr);
}

// PyYAML's float: 1.0, 1., 1.0e-4, .5, 190:20:30.15, .inf, -.inf, .nan; not 1e-4 (no dot).
std::optional<double> yaml_float(std::string_view text) {
  for (std::string_view nan : {".nan", ".NaN", ".NAN"})
    if (text == nan) return std::numeric_limits<double>::quiet_NaN();
  bool negative = false;
  std::string_view body = text;
  if (!body.empty() && (body[0] == '-' || body[0] == '+')) negative = body[0] == '-', body.remove_prefix(1);
  for (std::string_view inf : {".inf", ".Inf", ".INF"})
    if (body == inf)
      return negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  if (!text.empty() && text[0] == '.') {  // no sign before a leading dot
    const std::size_t end = skip_digits(text, 1);
    if (end == 1 || (end < text.size() && !is_exponent(text.substr(end)))) return std::nullopt;
    return decimal_value(text);
  }
  if (body.empty() || !std::isdigit(static_cast<unsigned char>(body[0]))) return std::nullopt;
  std::size_t i = skip_digits(body, 0);
  if (i < body.size() && body[i] == ':') {  // base 60, the last part with a fraction
    const std::size_t dot = body.find('.', i);
    if (dot == std::string_view::npos || skip_digits(body, dot + 1) != body.size()) return std::nullopt;
    auto whole = digits_value(body.substr(0, i), 10);
    if (whole) whole = sexagesimal_tail(body.substr(i, dot - i), *whole);
    if (!whole) return std::nullopt;
    const double value = static_cast<double>(*whole) + decimal_value("0" + std::string(body.substr(dot)));
    return negative ? -value : value;
  }
  if (i >= body.size() || body[i] != '.') return std::nullopt;
  i = skip_digits(body, i + 1);
  if (i < body.size() && !is_exponent(body.substr(i))) return std::nullopt;
  const double value = decimal_value(body);
  return negative ? -value : value;
}

std::optional<bool> yaml_bool(std::string_view text) {
  for (std::string_view yes : {"yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"})
    if (text == yes) return true;
  for (std::string_view no : {"no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"})
    if (text == no) return false;
  return std::nullopt;
}

bool yaml_null(std::string_view text) {
  return text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL";
}

// An untagged plain scalar, resolved as PyYAML's SafeLoader does.
json resolve_plain(std::string_view text) {
  if (yaml_null(text)) return nullptr;
  if (auto b = yaml_bool(text)) return *b;
  if (auto i = yaml_int(text)) return *i;
  if (auto f = yaml_float(text)) return *f;
  return std::string(text);
}

class JsonBuilder {
 public:
  explicit JsonBuilder(const std::string& source) : source_(source) {}

  // Feeds one event; returns false at the end of the stream.
  bool on(const yaml_event_t& event) {
    const yaml_mark_t& mark = event.start_mark;
    switch (event.type) {
      case YAML_STREAM_END_EVENT:
        return false;
      case YAML_DOCUMENT_START_EVENT:
        ++documents_;
        ZT_REQUIRE(documents_ == 1,
                   position(source_, mark) + ": a second YAML document; an arguments file holds one (drop the '---')");
        break;
      case YAML_SCALAR_EVENT:
        on_scalar(event);
        break;
      case YAML_ALIAS_EVENT:
        on_alias(text_of(event.data.alias.anchor), mark);
        break;
      case YAML_SEQUENCE_START_EVENT:
        open(json::array(), event.data.sequence_start.anchor, event.data.sequence_start.tag, "seq", mark);
        break;
      case YAML_MAPPING_START_EVENT:
        open(json::object(), event.data.mapping_start.anchor, event.data.mapping_start.tag, "map", mark);
        break;
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT:
        close();
        break;
      default:
        break;
    }
    return true;
  }

  json result() { return std::move(root_); }

 private:
  struct Open {
    json value;
    std::string anchor;
    std::size_t values = 1;
    std::optional<std::string> key;  // a mapping's key waiting for its value
    bool key_is_merge = false;
    std::vector<json> merged;  // `<<` sources, later ones winning
    yaml_mark_t mark{};
  };

  static std::string text_of(const yaml_char_t* text) {
    return text ? std::string(reinterpret_cast<const char*>(text)) : std::string();
  }

  void on_scalar(const yaml_event_t& event) {
    const auto& scalar = event.data.scalar;
    const std::string_view text(reinterpret_cast<const char*>(scalar.value), scalar.length);
    const std::string tag = text_of(scalar.tag);
    const bool plain = scalar.style == YAML_PLAIN_SCALAR_STYLE;
    json value;
    if (tag.empty())
      value = plain ? resolve_plain(text) : json(std::string(text));
    else
      value = tagged_scalar(text, tag, event.start_mark);
    const bool merge_key = plain && tag.empty() && text == "<<";
    if (!scalar.anchor) return add(std::move(value), 1, event.start_mark, merge_key);
    anchors_[text_of(scalar.anchor)] = {value, 1};
    add(std::move(value), 1, event.start_mark, merge_key);
  }

  json tagged_scalar(std::string_view text, const std::string& tag, const yaml_mark_t& mark) const {
    const std::string where = position(source_, mark);
    if (tag == "!" || tag == std::string(kCoreTag) + "str" || tag == std::string(kCoreTag) + "timestamp")
      return std::string(text);
    if (tag == std::string(kCoreTag) + "null") return nullptr;
    if (tag == std::string(kCoreTag) + "bool") {
      auto b = yaml_bool(text);
      ZT_REQUIRE(b.has_value(), where + ": '" + std::string(text) + "' is not a !!bool");
      return *b;
    }
    if (tag == std::string(kCoreTag) + "int") {
      auto i = yaml_int(text);
      ZT_REQUIRE(i.has_value(), where + ": '" + std::string(text) + "' is not a !!int");
      return *i;
    }
    if (tag == std::string(kCoreTag) + "float") {
      if (auto f = yaml_float(text)) return *f;
      auto i = yaml_int(text);
      ZT_REQUIRE(i.has_value(), where + ": '" + std::string(text) + "' is not a !!float");
      return static_cast<double>(*i);
    }
    fail(where + ": the tag " + tag + " is not one safe_load constructs; write the value without it");
  }

  void on_alias(const std::string& anchor, const yaml_mark_t& mark) {
    auto found = anchors_.find(anchor);
    ZT_REQUIRE(found != anchors_.end(),
               position(source_, mark) + ": *" + anchor + " refers to no complete &" + anchor + " before it");
    add(found->second.first, found->second.second, mark, false);
  }

  void open(json value, const yaml_char_t* anchor, const yaml_char_t* tag, const char* kind, const yaml_mark_t& mark) {
    const std::string tag_text = text_of(tag);
    ZT_REQUIRE(tag_text.empty() || tag_text == "!" || tag_text == std::string(kCoreTag) + kind,
               position(source_, mark) + ": the tag " + tag_text + " is not one safe_load constructs here");
    ZT_REQUIRE(stack_.size() < kMaxDepth,
               position(source_, mark) + ": nested deeper than " + std::to_string(kMaxDepth) + " levels");
    Open opened;
    opened.value = std::move(value);
    opened.anchor = text_of(anchor);
    opened.mark = mark;
    stack_.push_back(std::move(opened));
  }

  void close() {
    Open done = std::move(stack_.back());
    stack_.pop_back();
    if (!done.merged.empty()) {  // explicit keys win over merged ones
      json merged = json::object();
      for (const json& source : done.merged)
        for (const auto& [key, value] : source.items()) merged[key] = value;
      for (const auto& [key, value] : done.value.items()) merged[key] = value;
      done.value = std::move(merged);
    }
    if (!done.anchor.empty()) anchors_[done.anchor] = {done.value, done.values};
    add(std::move(done.value), done.values, done.mark, false);
  }

  // Places a finished value: the document's root, an item of a list, a mapping's key or value.
  void add(json value, std::size_t values, const yaml_mark_t& mark, bool merge_key) {
    values_ += values;
    ZT_REQUIRE(values_ <= kMaxValues, position(source_, mark) + ": the document expands to over " +
                                          std::to_string(kMaxValues) + " values (through aliases?)");
    if (stack_.empty()) {
      root_ = std::move(value);
      return;
    }
    Open& parent = stack_.back();
    parent.values += values;
    if (parent.value.is_array()) {
      parent.value.push_back(std::move(value));
    } else if (!parent.key) {
      ZT_REQUIRE(!value.is_structured(), position(source_, mark) + ": a map key must be a plain value");
      parent.key = value.is_string() ? value.get<std::string>() : value.dump();
      parent.key_is_merge = merge_key;
    } else if (parent.key_is_merge) {
      merge_into(parent, std::move(value), mark);
    } else {
      parent.value[*parent.key] = std::move(value);
      parent.key.reset();
    }
  }

  // `<<: *base` or `<<: [*a, *b]`, the earlier of a list winning, as PyYAML merges.
  void merge_into(Open& parent, json value, const yaml_mark_t& mark) {
    const std::string bad = position(source_, mark) + ": '<<' merges a map or a list of maps";
    if (value.is_array()) {
      for (auto it = value.rbegin(); it != value.rend(); ++it) {
        ZT_REQUIRE(it->is_object(), bad);
        parent.merged.push_back(std::move(*it));
      }
    } else {
      ZT_REQUIRE(value.is_object(), bad);
      parent.merged.push_back(std::move(value));
    }
    parent.key.reset();
    parent.key_is_merge = false;
  }

  const std::string& source_;
  std::vector<Open> stack_;
  std::map<std::string, std::pair<json, std::size_t>> anchors_;
  json root_;
  std::size_t values_ = 0;
  int documents_ = 0;
};

std::string parser_error(const yaml_parser_t& parser, const std::string& source) {
  const std::string problem = parser.problem ? parser.problem : "not valid YAML";
  if (parser.error == YAML_READER_ERROR)
    return source + ": byte " + std::to_string(parser.problem_offset) + ": " + problem;
  std::string message = position(source, parser.problem_mark) + ": " + problem;
  if (parser.context) message += " (" + std::string(parser.context) + ")";
  return message;
}

}  // namespace

json parse_yaml(std::string_view text, const std::string& source) {
  yaml_parser_t parser;
  ZT_REQUIRE(yaml_parser_initialize(&parser) != 0, source + ": out of memory starting the YAML parser");
  struct ParserOwner {
    yaml_parser_t* parser;
    ~ParserOwner() { yaml_parser_delete(parser); }
  } owner{&parser};
  yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()), text.size());
  JsonBuilder builder(source);
  while (true) {
    yaml_event_t event;
    if (yaml_parser_parse(&parser, &event) == 0) fail(parser_error(parser, source));
    struct EventOwner {
      yaml_event_t* event;
      ~EventOwner() { yaml_event_delete(event); }
    } event_owner{&event};
    if (!builder.on(event)) break;
  }
  return builder.result();
}

}  // namespace zt::train
