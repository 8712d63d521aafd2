#include "runtime/terminal/help_entry.h"

#include <algorithm>
#include <sstream>

namespace zt {
namespace {

std::string joined(const std::vector<std::string>& names, const char* separator) {
  std::string out;
  for (const std::string& name : names) {
    if (!out.empty()) out += separator;
    out += name;
  }
  return out;
}

// `text` word-wrapped into lines that start at kHelpColumn; the first line continues `head`.
std::string wrapped(std::string head, const std::string& text) {
  const std::string indent(kHelpColumn, ' ');
  if (head.size() >= kHelpColumn - 1) head += "\n" + indent;
  head.resize(std::max(head.size(), head.rfind('\n') + 1 + kHelpColumn), ' ');
  std::size_t line_start = head.rfind('\n') + 1;
  std::istringstream words(text);
  bool first = true;
  for (std::string word; words >> word; first = false) {
    if (!first && head.size() - line_start + 1 + word.size() > kHelpWidth) {
      head += "\n" + indent;
      line_start = head.size() - indent.size();
    } else if (!first) {
      head += ' ';
    }
    head += word;
  }
  return head + "\n";
}

}  // namespace

std::string help_entry(std::string head, const std::vector<std::string>& choices, std::string help,
                       const std::string& default_value) {
  if (!choices.empty()) {
    const std::string listed = " {" + joined(choices, ",") + "}";
    if (head.size() + listed.size() <= kHelpWidth) {
      head += listed;
    } else {
      help += "; one of: ";
      help += joined(choices, ", ");
    }
  }
  if (!default_value.empty()) help += " [" + default_value + "]";
  return wrapped(std::move(head), help);
}

}  // namespace zt
