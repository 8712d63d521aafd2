#include "models/hub/hub_settings.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "runtime/error.h"

namespace zt::models::hub {
namespace {

namespace fs = std::filesystem;

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

std::string trimmed(std::string text) {
  const auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  text.erase(text.begin(), std::find_if_not(text.begin(), text.end(), space));
  text.erase(std::find_if_not(text.rbegin(), text.rend(), space).base(), text.end());
  return text;
}

// A leading ~ is the home folder, as Python's expanduser reads it.
fs::path expanded(const std::string& path) {
  if (path == "~" || path.starts_with("~/"))
    return fs::path(environment("HOME")) / path.substr(std::min<std::size_t>(path.size(), 2));
  return path;
}

fs::path home_cache() {
  if (const std::string xdg = environment("XDG_CACHE_HOME"); !xdg.empty()) return expanded(xdg) / "huggingface";
  return expanded("~/.cache/huggingface");
}

fs::path hf_home() {
  const std::string home = environment("HF_HOME");
  return home.empty() ? home_cache() : expanded(home);
}

fs::path cache_folder() {
  for (const char* name : {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"})
    if (const std::string value = environment(name); !value.empty()) return expanded(value);
  return hf_home() / "hub";
}

std::string token() {
  for (const char* name : {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"})
    if (std::string value = trimmed(environment(name)); !value.empty()) return value;
  const std::string path = environment("HF_TOKEN_PATH");
  std::ifstream file(path.empty() ? hf_home() / "token" : expanded(path));
  std::stringstream text;
  text << file.rdbuf();
  return trimmed(text.str());
}

std::chrono::seconds seconds_from(const char* name, std::chrono::seconds fallback) {
  const std::string text = trimmed(environment(name));
  if (text.empty()) return fallback;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  ZT_REQUIRE(end == text.c_str() + text.size() && value > 0 && value < 1e6,
             std::string(name) + "=" + text + ": expected a number of seconds");
  return std::chrono::seconds(std::max<long long>(1, static_cast<long long>(value + 0.5)));
}

}  // namespace

bool environment_flag(const char* name) {
  std::string value = trimmed(environment(name));
  std::transform(value.begin(), value.end(), value.begin(), [](unsigned char c) { return std::toupper(c); });
  return value == "1" || value == "ON" || value == "YES" || value == "TRUE";
}

HubSettings hub_settings_from_environment() {
  HubSettings settings;
  if (std::string endpoint = trimmed(environment("HF_ENDPOINT")); !endpoint.empty()) {
    while (endpoint.ends_with('/')) endpoint.pop_back();
    ZT_REQUIRE(endpoint.starts_with("http://") || endpoint.starts_with("https://"),
               "HF_ENDPOINT=" + endpoint + ": expected the hub's address, such as https://huggingface.co");
    settings.endpoint = endpoint;
  }
  settings.token = token();
  settings.offline = environment_flag("HF_HUB_OFFLINE") || environment_flag("TRANSFORMERS_OFFLINE");
  settings.cache = cache_folder();
  settings.metadata_timeout = seconds_from("HF_HUB_ETAG_TIMEOUT", settings.metadata_timeout);
  settings.stall_timeout = seconds_from("HF_HUB_DOWNLOAD_TIMEOUT", settings.stall_timeout);
  settings.progress_bars = !environment_flag("HF_HUB_DISABLE_PROGRESS_BARS");
  return settings;
}

}  // namespace zt::models::hub
