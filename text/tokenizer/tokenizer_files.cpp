#include "text/tokenizer/tokenizer_files.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/error.h"
#include "runtime/json_text.h"

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
  return parse_tokenizer_json_text(read_tokenizer_file(path), path);
}

nlohmann::json parse_tokenizer_json_text(std::string_view text, const std::string& source) {
  return parse_json(text, source);
}

bool tokenizer_file_exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

}  // namespace zt::models
