// The one flag grammar of every zerotune command, train included, as HF's argument parser reads
// flags: each command declares its flags once in a FlagTable (name, kind of value, help,
// default, aliases, accepted words), from which its command line is read (flag_words.h) and its
// --help written (flag_help.h). A value is checked by its flag's kind with check_flag_value,
// which both the other commands' parse (cli/flag_table.h) and train's arguments, from the
// command line or a file (train/args/argument_reader.h), type their values with.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace zt {

enum class FlagKind {
  kBool,             // --flag, --flag true, --flag false (and HF's other words for them)
  kText,             // any text
  kNumber,           // a finite number
  kPositiveNumber,   // a number above 0
  kInteger,          // a whole number
  kPositiveInteger,  // a whole number above 0
  kChoice,           // one of `choices`
  kList,             // --name a b c, or --name a,b,c: the words joined by commas
};

struct Flag {
  std::string name;  // "--max_new_tokens"
  FlagKind kind = FlagKind::kText;
  std::string value = {};  // what --help calls the value ("N", "DIR"); booleans have none
  std::string help = {};
  std::string default_value = {};         // shown as [default_value]; empty: none shown
  std::vector<std::string> aliases = {};  // other accepted names (LLaMA-Factory's, older ones)
  std::vector<std::string> choices = {};  // kChoice's words
  // Words a higher layer knows (a device, a dtype, a chat template's name): throws zt::Error
  // for a wrong one, which check_flag_value reports as the flag's usage error. A kChoice flag's
  // check sees a word outside its choices first, to name why that one is refused.
  std::function<void(const std::string&)> check = {};
};

// A flag the command once took and no longer does: giving it fails with `reason` and the advice
// to drop it, rather than with "unknown option".
struct RemovedFlag {
  std::string name;    // "--fused_decode"
  std::string reason;  // completes "--name was removed: ..."
};

// Flags --help shows together under a title; a hidden group's flags are read but not shown
// (train's names accepted without effect, which docs/TRAINING.md lists).
struct FlagGroup {
  std::string title;
  std::vector<Flag> flags;
  bool hidden = false;
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
  std::vector<std::string> usages = {};    // further usage lines, each after "zerotune <command> "
  // LLaMA-Factory's `name=value` words set --name too (train's overrides after an arguments file).
  bool name_value_words = false;

  // The flag `name` or an alias of it stands for; nullptr when the command has none.
  const Flag* find(const std::string& name) const;
};

// The flag called `name` among `declared` (a list of shared declarations); a name not there is
// a bug, reported as an error.
Flag flag_named(const std::vector<Flag>& declared, const std::string& name);

// A boolean's word as HF's string_to_bool reads it (true/false, yes/no, y/n, t/f, 1/0, any
// case); nullopt for any other word.
std::optional<bool> flag_bool(const std::string& word);

// `value` checked by `flag`'s kind (and its `check`); a wrong one throws zt::UsageError naming
// the flag and what it takes.
void check_flag_value(const Flag& flag, const std::string& value);

// `text` as a number for `flag`; anything else is a zt::UsageError naming both.
double number_flag(const std::string& flag, const std::string& text);
std::int64_t integer_flag(const std::string& flag, const std::string& text);

// Every problem of a command line at once, as a zt::UsageError: the one problem's message, or
// "the arguments have N problems:" and each on a line of its own.
[[noreturn]] void fail_with_flag_problems(const std::vector<std::string>& problems);

}  // namespace zt
