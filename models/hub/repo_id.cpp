#include "models/hub/repo_id.h"

#include <cctype>
#include <filesystem>

namespace zt::models::hub {
namespace {

constexpr std::size_t kMaxRepoIdLength = 96;

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

// One part of an id: letters, digits, - _ . beginning and ending with a letter, digit or _.
bool is_id_part(const std::string& part) {
  if (part.empty() || !is_word_char(part.front()) || !is_word_char(part.back())) return false;
  for (char c : part)
    if (!is_word_char(c) && c != '-' && c != '.') return false;
  return true;
}

}  // namespace

bool is_hub_model_id(const std::string& name_or_path) {
  const std::string& name = name_or_path;
  if (name.empty() || name.size() > kMaxRepoIdLength) return false;
  if (name.front() == '/' || name.front() == '.' || name.front() == '~') return false;
  if (name.find("--") != std::string::npos || name.find("..") != std::string::npos) return false;
  std::error_code ec;
  if (std::filesystem::exists(name, ec)) return false;
  const std::size_t slash = name.find('/');
  if (slash == std::string::npos) return is_id_part(name);
  // `models/Qwen2.5-7B` where ./models exists is a path with a mistyped last part, not a repo.
  if (std::filesystem::is_directory(name.substr(0, slash), ec)) return false;
  return is_id_part(name.substr(0, slash)) && is_id_part(name.substr(slash + 1));
}

std::string repo_folder_name(const std::string& repo_id) {
  std::string folder = "models--";
  for (char c : repo_id) folder += c == '/' ? std::string("--") : std::string(1, c);
  return folder;
}

bool is_commit_hash(const std::string& text) {
  if (text.size() != 40) return false;
  for (char c : text)
    if (!std::isdigit(static_cast<unsigned char>(c)) && (c < 'a' || c > 'f')) return false;
  return true;
}

std::string url_escaped(const std::string& text, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string escaped;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      escaped += static_cast<char>(c);
    } else {
      escaped += '%';
      escaped += kHex[c >> 4];
      escaped += kHex[c & 15];
    }
  }
  return escaped;
}

}  // namespace zt::models::hub
