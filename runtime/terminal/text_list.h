// Comma-separated lists as flags spell them (--lora_target q_proj,v_proj), and lists joined
// back for messages.
#pragma once

#include <string>
#include <vector>

namespace zt {

// "a, b,,c " -> {"a", "b", "c"}: items trimmed of spaces and tabs, empty ones dropped.
std::vector<std::string> split_comma_list(const std::string& text);

// {"a", "b"} -> "a, b".
std::string join_list(const std::vector<std::string>& items);

}  // namespace zt
