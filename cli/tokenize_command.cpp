// `zerotune tokenize`: the model folder's tokenizer on stdin, one line at a time. Encoding
// writes one JSON array of ids per input line; --decode reads such arrays and writes text.
#include <iostream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "models/hub/resolve_model.h"
#include "runtime/error.h"
#include "text/tokenizer/tokenizer.h"

namespace zt::cli {
namespace {

struct TokenizeOptions {
  std::string model_dir;
  std::string revision = "main";
  bool decode = false;
  bool add_special_tokens = true;
  bool skip_special_tokens = false;
};

const char* kUsage =
    "usage: zerotune tokenize --model_name_or_path DIR [--revision REV] [--decode]\n"
    "                         [--add_special_tokens true|false] [--skip_special_tokens true|false]\n\n"
    "Reads lines on stdin and encodes each with the tokenizer of DIR (tokenizer.json, vocab.json +\n"
    "merges.txt, or tokenizer.model), writing one JSON array of ids per line.\n"
    "  --decode               read one JSON array of ids per line and write its text instead\n"
    "  --add_special_tokens   add the model's prefix tokens, as HF does by default (default true)\n"
    "  --skip_special_tokens  leave special tokens out of decoded text (default false)\n"
    "Boolean flags accept --flag, --flag true and --flag false.\n"
    "DIR may be a hub id (Org/Name): its tokenizer files are read from the hub cache, or downloaded there\n"
    "(see --revision in `zerotune generate --help`).\n";

// Reads a boolean flag at args[i]: a following "true"/"false" is its value, else it is true.
bool boolean_flag(const std::vector<std::string>& args, std::size_t& i) {
  if (i + 1 < args.size() && (args[i + 1] == "true" || args[i + 1] == "false")) return args[++i] == "true";
  return true;
}

// Parses the options; returns an exit code when the command should stop right away.
std::optional<int> parse(const std::vector<std::string>& args, TokenizeOptions& options) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    std::optional<std::string> inline_value;
    if (const std::size_t eq = arg.find('='); arg.starts_with("--") && eq != std::string::npos) {
      inline_value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    const bool takes_text = arg == "--model_name_or_path" || arg == "--revision";
    if (inline_value && !takes_text && *inline_value != "true" && *inline_value != "false") {
      std::cerr << "zerotune tokenize: error: " << arg << " takes true or false, got '" << *inline_value << "'\n";
      return kExitUsage;
    }
    auto flag_value = [&] { return inline_value ? *inline_value == "true" : boolean_flag(args, i); };
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    } else if (takes_text) {
      std::string& value = arg == "--revision" ? options.revision : options.model_dir;
      if (inline_value) {
        value = *inline_value;
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        std::cerr << "zerotune tokenize: error: " << arg
                  << (arg == "--revision" ? " needs a branch, tag or commit\n" : " needs a folder\n") << kUsage;
        return kExitUsage;
      }
    } else if (arg == "--decode") {
      options.decode = flag_value();
    } else if (arg == "--add_special_tokens") {
      options.add_special_tokens = flag_value();
    } else if (arg == "--skip_special_tokens") {
      options.skip_special_tokens = flag_value();
    } else {
      std::cerr << "zerotune tokenize: error: unknown option '" << args[i] << "'\n" << kUsage;
      return kExitUsage;
    }
  }
  if (options.model_dir.empty()) {
    std::cerr << "zerotune tokenize: error: --model_name_or_path is required\n" << kUsage;
    return kExitUsage;
  }
  return std::nullopt;
}

std::vector<models::TokenId> parse_ids(const std::string& line) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception&) {
    zt::fail("expected a JSON array of token ids, got '" + line + "'");
  }
  if (!json.is_array()) zt::fail("expected a JSON array of token ids, got '" + line + "'");
  std::vector<models::TokenId> ids;
  for (const auto& id : json) {
    if (!id.is_number_integer()) zt::fail(id.dump() + " is not a token id");
    ids.push_back(id.get<models::TokenId>());
  }
  return ids;
}

int run_tokenize(const std::vector<std::string>& args) {
  TokenizeOptions options;
  if (const std::optional<int> code = parse(args, options)) return *code;
  const auto tokenizer = models::load_tokenizer(
      models::hub::resolve_model_path(options.model_dir, options.revision, models::hub::kTokenizerOnly));
  std::string line;
  for (std::size_t number = 1; std::getline(std::cin, line); ++number) {
    try {
      if (options.decode)
        std::cout << tokenizer->decode(parse_ids(line), options.skip_special_tokens) << "\n";
      else
        std::cout << nlohmann::json(tokenizer->encode(line, options.add_special_tokens)).dump() << "\n";
    } catch (const Error& e) {
      zt::fail("stdin line " + std::to_string(number) + ": " + e.what());
    }
  }
  return 0;
}

const Registration registration{
    {"tokenize", "encode text to token ids (or --decode ids) with a model's tokenizer", run_tokenize}};

}  // namespace
}  // namespace zt::cli
