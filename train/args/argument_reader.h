// Reads arguments into a TrainingArguments: command-line flags, read by the grammar of every
// command (runtime/flags/flag_words.h) through train's flag table, and the object an arguments
// file holds, its names looked up in the same table. Honoured names set their member
// (argument_table.h), their values checked by their flag's kind; accepted names without a member
// are recorded in `other_arguments` (other_arguments.h) and judged once reading is done. Each
// problem is appended to `errors`, so all of them are reported together.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "train/args/training_arguments.h"

namespace zt::train {

// A file's value as a flag's text: a list of plain values joins with commas (lora_target:
// [q_proj, v_proj]); objects keep their JSON (deepspeed, *_kwargs); a boolean is true or false.
std::string flag_text_of(const nlohmann::json& value);

// LLaMA-Factory's benchmark file (examples/train_lora/llama3_lora_eval.yaml through 0.9.3, for
// `llamafactory-cli eval`), which every command that takes an arguments file meets as a set of
// unknown names: the text after the file's path saying what it is and what zerotune does
// instead; empty for any other file.
std::string llama_factory_benchmark_layout(const nlohmann::json& object);

class ArgumentReader {
 public:
  ArgumentReader(TrainingArguments& args, std::vector<std::string>& errors) : args_(args), errors_(errors) {}

  // `--name value`, `--name=value`, a boolean's bare `--name`, a list's `--name a b c`, and
  // LLaMA-Factory's `name=value` overrides; a word that is no flag is a problem.
  void read_flags(const std::vector<std::string>& tokens);
  // A file's top-level object of names and values. null makes an optional argument none, as HF's
  // parser does (enable_thinking: null is LLaMA-Factory's third setting), and leaves any other
  // at its default.
  void read_object(const nlohmann::json& object, const std::string& source);

 private:
  void set_member(const std::string& name, const std::string& text, const std::string& where);
  void set_other(const std::string& name, nlohmann::json value);

  TrainingArguments& args_;
  std::vector<std::string>& errors_;
};

}  // namespace zt::train
