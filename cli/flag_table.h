// The flag grammar of every zerotune command but train (whose flags fill TrainingArguments from
// files too: train/args/argument_table.h), as HF's argument parser reads flags: `--name value`,
// `--name=value`, and booleans as `--flag`, `--flag true` or `--flag false`. A command declares
// each flag once in its FlagTable (name, kind of value, help, default, aliases); the table
// parses the command line, checking each value by its kind as it is read, and writes --help.
// Flags several commands take (the model's, the sampling flags) are declared once and shared.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace zt::cli {

enum class FlagKind {
  kBool,             // --flag, --flag true, --flag false
  kText,             // any text
  kNumber,           // a finite number
  kPositiveNumber,   // a number above 0
  kInteger,          // a whole number
  kPositiveInteger,  // a whole number above 0
  kChoice,           // one of `choices`
  kDevice,           // cpu, cuda, cuda:N (runtime/device.h)
  kDtype,            // float32, bfloat16, float16 and their other names (runtime/dtype.h)
  kTemplate,         // a chat template's name (text/chat_template/template_names.h)
};

struct Flag {
  std::string name;  // "--max_new_tokens"
  FlagKind kind = FlagKind::kText;
  std::string value = {};  // what --help calls the value ("N", "DIR"); booleans have none
  std::string help = {};
  std::string default_value = {};         // shown as [default_value]; empty: none shown
  std::vector<std::string> aliases = {};  // other accepted names (LLaMA-Factory's, older ones)
  std::vector<std::string> choices = {};  // kChoice's words
};

// A flag the command once took and no longer does: giving it fails with `reason` and the advice
// to drop it, rather than with "unknown option".
struct RemovedFlag {
  std::string name;    // "--fused_decode"
  std::string reason;  // completes "--name was removed: ..."
};

// Flags --help shows together under a title.
struct FlagGroup {
  std::string title;
  std::vector<Flag> flags;
};

struct FlagTable {
  std::string command;      // "generate": messages say `zerotune generate --help`
  std::string description;  // --help's prose between the usage line and the flags
  std::vector<FlagGroup> groups;
  std::vector<std::string> required = {};  // flags that must be given
  std::vector<std::string> one_of = {};    // exactly one of these must be given (when not empty)
  std::string notes = {};                  // --help's prose after the flags
  std::string operands = {};               // what the usage line shows after the flags ("<command> [args...]")
  std::vector<RemovedFlag> removed = {};   // refused with their reason; --help leaves them out

  // The flag `name` or an alias of it stands for; nullptr when the command has none.
  const Flag* find(const std::string& name) const;
};

// The flag called `name` among `declared` (a list of shared declarations); a name not there is
// a bug, reported as an error.
Flag flag_named(const std::vector<Flag>& declared, const std::string& name);

// Every given flag by its name (an alias's by the flag's name; booleans as "true"/"false"), and
// the table's defaults, which the typed reads fall back on: a default lives in the table alone.
class Flags : public std::map<std::string, std::string> {
 public:
  // --name as given, else its default, else empty.
  std::string text(const std::string& name) const;
  // Whether the boolean --name is true, as given or by default (no default: false).
  bool is_true(const std::string& name) const;
  // --name's whole number, as given or by default; a flag with neither is a bug.
  std::int64_t integer(const std::string& name) const;
  // --name's number, as given or by default; a flag with neither is a bug.
  double number(const std::string& name) const;

  std::map<std::string, std::string> defaults;
};

// Every flag of `args` by name. An unknown flag (with the nearest known one, the command's own
// flag for a name of LLaMA-Factory or of training, or why a removed flag went), a missing
// value, a value not of the flag's kind, or a missing required flag throws zt::UsageError
// naming the flag.
Flags parse_flags(const std::vector<std::string>& args, const FlagTable& table);

// `zerotune <command> --help`: the usage line (the required flags, [options], the operands), the
// description, each group's flags with their help, accepted words and defaults, the notes.
std::string flags_help(const FlagTable& table);

// A command's whole run: --help (or -h) prints flags_help; otherwise `body` runs with the parsed
// flags (a flag error is a zt::UsageError, which the CLI exits with code 2 for).
int run_with_flags(const std::vector<std::string>& args, const FlagTable& table,
                   const std::function<int(Flags&)>& body);

// `text` as a number for `flag`; anything else is a zt::UsageError naming both.
double number_flag(const std::string& flag, const std::string& text);
std::int64_t integer_flag(const std::string& flag, const std::string& text);
// The whole number --name holds, or `fallback` when it is not given (for a default that is
// not one value, such as the visible GPUs).
std::int64_t integer_flag_or(const Flags& flags, const std::string& name, std::int64_t fallback);

}  // namespace zt::cli
