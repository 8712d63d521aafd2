// `zerotune tokenize`: the model folder's tokenizer on stdin, one line at a time. Encoding
// writes one JSON array of ids per input line; --decode reads such arrays and writes text.
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/flags.h"
#include "runtime/error.h"
#include "text/tokenizer/tokenizer.h"

namespace zt::cli {
namespace {

FlagTable flag_table() {
  return {.command = "tokenize",
          .description =
              "Reads lines on stdin and encodes each with the tokenizer of DIR (tokenizer.json, vocab.json +\n"
              "merges.txt, or tokenizer.model), writing one JSON array of ids per line.\n",
          .groups = {{"Tokenizer",
                      {with_help(model_flag("--model_name_or_path"),
                                 "the model folder whose tokenizer is read, or a hub id (Org/Name), of which only "
                                 "the tokenizer files are read from the hub cache or downloaded there"),
                       model_flag("--revision"),
                       {.name = "--decode",
                        .kind = FlagKind::kBool,
                        .help = "read one JSON array of ids per line and write its text instead",
                        .default_value = "false"},
                       {.name = "--add_special_tokens",
                        .kind = FlagKind::kBool,
                        .help = "add the model's prefix tokens, as HF does by default",
                        .default_value = "true"},
                       {.name = "--skip_special_tokens",
                        .kind = FlagKind::kBool,
                        .help = "leave special tokens out of decoded text",
                        .default_value = "false"}}}},
          .required = {"--model_name_or_path"}};
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

int tokenize(Flags& flags) {
  const bool decode = flags.is_true("--decode");
  const bool add_special_tokens = flags.is_true("--add_special_tokens");
  const bool skip_special_tokens = flags.is_true("--skip_special_tokens");
  resolve_model_flag(flags, models::hub::kTokenizerOnly);
  const auto tokenizer = models::load_tokenizer(flags.at("--model_name_or_path"));
  std::string line;
  for (std::size_t number = 1; std::getline(std::cin, line); ++number) {
    try {
      if (decode) {
        // Ids typed in must be the tokenizer's (decode alone leaves out those past it).
        const std::vector<models::TokenId> ids = parse_ids(line);
        for (models::TokenId id : ids) tokenizer->require_valid_id(id);
        std::cout << tokenizer->decode(ids, skip_special_tokens) << "\n";
      } else {
        std::cout << nlohmann::json(tokenizer->encode(line, add_special_tokens)).dump() << "\n";
      }
    } catch (const Error& e) {
      zt::fail("stdin line " + std::to_string(number) + ": " + e.what());
    }
  }
  return 0;
}

int run_tokenize(const std::vector<std::string>& args) { return run_with_flags(args, flag_table(), tokenize); }

const Registration registration{
    {"tokenize", "encode text to token ids (or --decode ids) with a model's tokenizer", run_tokenize, flag_table}};

}  // namespace
}  // namespace zt::cli
