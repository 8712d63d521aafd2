#include "train/report/interruption_report.h"

#include <algorithm>
#include <cctype>
#include <fstream>

#include "runtime/stop_signals.h"

namespace zt::train {
namespace {

constexpr std::string_view kFlag = "--resume_from_checkpoint";
constexpr std::string_view kOverride = "resume_from_checkpoint=";

// A word a shell reads as it is, else the word in single quotes.
std::string shell_word(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](unsigned char c) {
    return std::isalnum(c) || std::string_view("_-./=:,+@%").find(static_cast<char>(c)) != std::string_view::npos;
  });
  if (plain) return word;
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

bool starts_with(const std::string& text, std::string_view prefix) { return text.rfind(prefix, 0) == 0; }

std::string checkpoint_hint(const Interruption& stop) {
  if (!stop.saves_checkpoints)
    return "Checkpoints are off (--save_strategy no); --save_strategy steps --save_steps N saves one every N steps";
  if (!stop.save_steps)
    return "The first checkpoint was due at the end of the first epoch (--save_strategy epoch); --save_strategy "
           "steps --save_steps N saves one every N steps";
  const std::string steps = std::to_string(*stop.save_steps);
  return "The first checkpoint was due at step " + steps + " (--save_steps " + steps +
         "); a smaller --save_steps saves sooner";
}

}  // namespace

std::string resume_command(const std::vector<std::string>& command_line, const std::string& checkpoint) {
  std::vector<std::string> words = command_line;
  bool replaced = false;
  for (std::size_t i = 1; i < words.size(); ++i) {
    if (words[i] == kFlag && i + 1 < words.size()) {
      words[++i] = checkpoint;
      replaced = true;
    } else if (starts_with(words[i], std::string(kFlag) + "=")) {
      words[i] = std::string(kFlag) + "=" + checkpoint;
      replaced = true;
    } else if (starts_with(words[i], kOverride)) {
      words[i] = std::string(kOverride) + checkpoint;
      replaced = true;
    }
  }
  if (!replaced) words.insert(words.end(), {std::string(kFlag), checkpoint});
  std::string command;
  for (const std::string& word : words) command.append(command.empty() ? "" : " ").append(shell_word(word));
  return command;
}

std::string interruption_message(const Interruption& stop, const std::vector<std::string>& command_line) {
  std::string message = std::string("stopped by ") + stop_signal_name(stop.signal) + " after step " +
                        std::to_string(stop.step) + " of " + std::to_string(stop.max_steps);
  if (stop.last_checkpoint.empty())
    return message + ", before this run saved any checkpoint: there is nothing to resume from. " +
           checkpoint_hint(stop);
  message += ". The last complete checkpoint is " + stop.last_checkpoint + "; to go on from it";
  message += stop.launched ? ", start every rank again with the same launcher and this command:\n  " : ", run:\n  ";
  return message + resume_command(command_line, stop.last_checkpoint);
}

std::vector<std::string> own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> words;
  for (std::string word; std::getline(in, word, '\0');) words.push_back(word);
  return words;
}

}  // namespace zt::train
