#include "text/tokenizer/tokenizer_files.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/error.h"

namespace zt::models {

std::string read_tokenizer_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) zt::fail("cannot open tokenizer file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) zt::fail("cannot read tokenizer file '" + path + "'");
  return std::move(text).str();
}

nlohmann::json read_tokenizer_json(const std::string& path) {
  const std::string text = read_tokenizer_file(path);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    zt::fail("'" + path + "' is not valid JSON: " + e.what());
  }
}

bool tokenizer_file_exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

}  // namespace zt::models
