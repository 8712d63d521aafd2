// `zerotune generate`: continue a prompt with a model folder's weights and tokenizer, with
// the sampling settings of its generation_config.json unless a flag overrides them.
#include <iostream>

#include "cli/command.h"
#include "cli/flags.h"
#include "models/generate.h"
#include "models/tokenizer.h"
#include "runtime/error.h"

namespace zt::cli {
namespace {

constexpr const char* kUsage =
    "usage: zerotune generate --model_name_or_path DIR --prompt TEXT [--max_new_tokens N]\n"
    "                         [--do_sample [true|false]] [--temperature T] [--top_k K] [--top_p P]\n"
    "                         [--repetition_penalty R] [--seed S] [--adapter_name_or_path ADAPTER]\n"
    "                         [--ptuning_checkpoint DIR] [--device cpu|cuda|cuda:N] [--dtype D]\n\n"
    "Prints the new text after the prompt (tokenized with the model's special tokens). Unset\n"
    "options come from DIR/generation_config.json, else transformers' defaults (greedy,\n"
    "max_new_tokens 20); generation stops after an eos token.\n"
    "  --adapter_name_or_path  a LoRA adapter folder (PEFT's layout) applied to the model\n"
    "  --ptuning_checkpoint    a P-Tuning v2 prefix (zerotune train --finetuning_type ptuning)\n"
    "  --device   default cuda when a GPU is usable, else cpu\n"
    "  --dtype    default bfloat16 on a GPU, float32 on the CPU\n";

FlagSpec flag_spec() {
  FlagSpec spec{.command = "generate", .value_flags = kModelFlags, .bool_flags = {"--do_sample"},
                .required = {"--model_name_or_path", "--prompt"}};
  spec.value_flags.insert({"--prompt", "--max_new_tokens", "--temperature", "--top_k", "--top_p",
                           "--repetition_penalty", "--seed"});
  return spec;
}

template <typename T>
T parse_number(const std::string& name, const std::string& text) {
  try {
    std::size_t used = 0;
    T value = std::is_floating_point_v<T> ? static_cast<T>(std::stod(text, &used)) : static_cast<T>(std::stoll(text, &used));
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  fail(name + " must be a number, got '" + text + "'");
}

models::GenerationOptions options_from(const std::map<std::string, std::string>& flags, const std::string& dir,
                                       const models::CausalLM& model, const models::Tokenizer& tokenizer) {
  models::GenerationOptions options = models::load_generation_options(dir, model.config());
  auto flag = [&](const char* name) { return flags.count(name) ? &flags.at(name) : nullptr; };
  if (auto v = flag("--max_new_tokens")) options.max_new_tokens = parse_number<std::int64_t>("--max_new_tokens", *v);
  if (auto v = flag("--do_sample")) options.do_sample = *v == "true";
  if (auto v = flag("--temperature")) options.temperature = parse_number<double>("--temperature", *v);
  if (auto v = flag("--top_k")) options.top_k = parse_number<std::int64_t>("--top_k", *v);
  if (auto v = flag("--top_p")) options.top_p = parse_number<double>("--top_p", *v);
  if (auto v = flag("--repetition_penalty"))
    options.repetition_penalty = parse_number<double>("--repetition_penalty", *v);
  if (auto v = flag("--seed")) options.seed = parse_number<std::uint64_t>("--seed", *v);
  if (options.eos_token_ids.empty() && tokenizer.special_ids().eos)
    options.eos_token_ids.push_back(*tokenizer.special_ids().eos);
  models::check_generation_options(options);
  return options;
}

int generate_text(Flags& flags) {
  const std::string dir = flags["--model_name_or_path"];
  std::unique_ptr<models::Tokenizer> tokenizer = models::load_tokenizer(dir);
  models::CausalLM model = load_model_from_flags(flags);
  models::GenerationOptions options = options_from(flags, dir, model, *tokenizer);
  std::vector<models::TokenId> prompt = tokenizer->encode(flags["--prompt"]);
  std::vector<std::int64_t> new_ids = models::generate(model, {prompt.begin(), prompt.end()}, options);
  std::vector<models::TokenId> ids(new_ids.begin(), new_ids.end());
  std::cout << tokenizer->decode(ids, /*skip_special_tokens=*/true) << "\n";
  return 0;
}

int run_generate(const std::vector<std::string>& args) {
  return run_with_flags(args, flag_spec(), kUsage, generate_text);
}

const Registration registration{{"generate", "continue a prompt with a model (greedy or sampled)", run_generate}};

}  // namespace
}  // namespace zt::cli
