#include "serve/tool_calls.h"

#include <mutex>
#include <random>
#include <regex>

#include "text/chat_template/python_json.h"

namespace zt::serve {
namespace {

using nlohmann::ordered_json;

constexpr std::string_view kStart = "<tool_call>";
constexpr std::string_view kEnd = "</tool_call>";

// The text inside each <tool_call> block, as vLLM's regex
// `<tool_call>(.*?)</tool_call>|<tool_call>(.*)` finds them: a block ends at the first closing
// tag after it; one with none runs to the end of the text.
std::vector<std::string> blocks(const std::string& text) {
  std::vector<std::string> found;
  for (std::size_t start = text.find(kStart); start != std::string::npos;) {
    const std::size_t inside = start + kStart.size(), end = text.find(kEnd, inside);
    if (end == std::string::npos) {
      found.push_back(text.substr(inside));
      break;
    }
    found.push_back(text.substr(inside, end - inside));
    start = text.find(kStart, end + kEnd.size());
  }
  return found;
}

// The length of the longest end of `text` that begins `tag` (vLLM's partial_tag_overlap).
std::size_t partial_tag_overlap(std::string_view text, std::string_view tag) {
  for (std::size_t k = std::min(tag.size() - 1, text.size()); k > 0; --k)
    if (text.substr(text.size() - k) == tag.substr(0, k)) return k;
  return 0;
}

std::string strip(std::string_view text) {
  const std::size_t first = text.find_first_not_of(" \t\r\n\f\v");
  if (first == std::string_view::npos) return "";
  return std::string(text.substr(first, text.find_last_not_of(" \t\r\n\f\v") - first + 1));
}

// Each block's JSON text and whether it is complete (vLLM's _extract_tool_call_jsons): a
// closed block is; an open one when it already parses, its closing tag not yet decoded.
std::vector<std::pair<std::string, bool>> block_jsons(const std::string& text) {
  std::vector<std::pair<std::string, bool>> found;
  for (std::size_t start = text.find(kStart); start != std::string::npos;) {
    const std::size_t inside = start + kStart.size(), end = text.find(kEnd, inside);
    if (end != std::string::npos) {
      found.emplace_back(strip(std::string_view(text).substr(inside, end - inside)), true);
      start = text.find(kStart, end + kEnd.size());
      continue;
    }
    std::string_view raw = std::string_view(text).substr(inside);
    raw.remove_suffix(partial_tag_overlap(raw, kEnd));
    const std::string json = strip(raw);
    found.emplace_back(json, !json.empty() && nlohmann::json::accept(json));
    break;
  }
  return found;
}

// The function's name once its closing quote has come (vLLM's _extract_tool_name).
std::optional<std::string> name_in(const std::string& json) {
  static const std::regex name("\"name\"\\s*:\\s*\"([^\"]+)\"");
  std::smatch match;
  if (!std::regex_search(json, match, name)) return std::nullopt;
  return match[1].str();
}

// The arguments' text as the model wrote it, whole or so far (vLLM's _extract_tool_args): an
// object or list up to its matching bracket (brackets inside strings skipped); a scalar to the
// end, less the block's closing brace once the block is complete.
std::optional<std::string> arguments_in(const std::string& json, bool complete) {
  static const std::regex key("\"arguments\"\\s*:\\s*");
  std::smatch match;
  if (!std::regex_search(json, match, key)) return std::nullopt;
  std::string raw = json.substr(match.position(0) + match.length(0));
  if (raw.empty() || (raw[0] != '{' && raw[0] != '[')) {
    if (complete) {
      raw.erase(raw.find_last_not_of(" \t\r\n\f\v") + 1);
      if (!raw.empty() && raw.back() == '}') raw.pop_back();
      raw.erase(raw.find_last_not_of(" \t\r\n\f\v") + 1);
    }
    return raw;
  }
  const char open = raw[0], close = open == '{' ? '}' : ']';
  int depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const char c = raw[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    if (c == open) ++depth;
    if (c == close && --depth == 0) return raw.substr(0, i + 1);
  }
  return raw;
}

std::string call_id() { return "call_" + random_hex(24); }

}  // namespace

std::string random_hex(std::size_t digits) {
  static std::mutex mutex;
  static std::mt19937_64 generator{[] {
    std::random_device device;
    return (static_cast<std::uint64_t>(device()) << 32) ^ device();
  }()};
  static constexpr char kHex[] = "0123456789abcdef";
  const std::lock_guard lock(mutex);
  std::string out;
  for (std::size_t i = 0; i < digits; ++i) out += kHex[generator() % 16];
  return out;
}

ExtractedToolCalls extract_tool_calls(const std::string& text, std::size_t max_calls) {
  ExtractedToolCalls result;
  if (text.find(kStart) == std::string::npos) {
    result.content = text;
    return result;
  }
  for (const std::string& block : blocks(text)) {
    const ordered_json call = ordered_json::parse(block, nullptr, /*allow_exceptions=*/false);
    // vLLM falls back to the whole answer as content when any block fails to load.
    if (call.is_discarded() || !call.is_object() || !call.contains("name") || !call["name"].is_string() ||
        !call.contains("arguments"))
      return {.called = false, .content = text, .calls = {}};
    if (result.calls.size() < max_calls)
      result.calls.push_back(
          {call_id(), call["name"].get<std::string>(), models::python_json_dumps(call["arguments"])});
  }
  result.called = true;
  const std::string before = text.substr(0, text.find(kStart));
  if (!before.empty()) result.content = before;
  return result;
}

std::string ToolCallStream::take_content(const std::string& text, bool finished) {
  const std::size_t start = text.find(kStart);
  std::size_t sendable = start;
  if (start == std::string::npos) sendable = finished ? text.size() : text.size() - partial_tag_overlap(text, kStart);
  if (sendable <= content_sent_) return "";
  std::string content = text.substr(content_sent_, sendable - content_sent_);
  content_sent_ = sendable;
  return content;
}

ToolCallStream::Delta ToolCallStream::next(const std::string& text, bool finished) {
  Delta delta;
  delta.content = take_content(text, finished);
  const std::vector<std::pair<std::string, bool>> jsons = block_jsons(text);
  for (std::size_t i = 0; i < jsons.size() && i < max_calls_; ++i) {
    const auto& [json, complete] = jsons[i];
    nlohmann::json entry = {{"index", i}};
    if (i == calls_.size()) {
      const std::optional<std::string> name = name_in(json);
      if (!name) break;  // call i + 1 cannot start before call i has its name
      calls_.push_back({*name, ""});
      entry["id"] = call_id();
      entry["type"] = "function";
      entry["function"] = {{"name", *name}, {"arguments", ""}};
    }
    const std::optional<std::string> arguments = arguments_in(json, complete);
    Streamed& call = calls_[i];
    if (arguments && arguments->size() > call.arguments.size()) {
      entry["function"]["arguments"] = arguments->substr(call.arguments.size());
      call.arguments = *arguments;
    }
    if (entry.contains("function")) delta.tool_calls.push_back(std::move(entry));
  }
  return delta;
}

}  // namespace zt::serve
