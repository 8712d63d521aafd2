// `zerotune generate`: continue one prompt (--prompt) or a file of them (--input_file) with a
// model folder's weights and tokenizer, many at once with continuous batching, with the
// sampling settings of its generation_config.json unless a flag overrides them.
#include <unistd.h>
#include <algorithm>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/generation_flags.h"
#include "cli/prompt_file.h"
#include "infer/engine.h"
#include "infer/tensor_parallel_engine.h"
#include "runtime/atomic_file.h"
#include "runtime/error.h"
#include "runtime/terminal/progress_bar.h"
#include "runtime/user_paths.h"
#include "text/stream_decoder.h"

namespace zt::cli {
namespace {

constexpr const char* kDescription =
    "Continues each prompt and prints the new text (tokenized with the model's special tokens;\n"
    "generation stops after an eos token). Prompts of --input_file (JSON Lines or a JSON array)\n"
    "are plain strings, {\"prompt\": ...}, alpaca {\"instruction\", \"input\"} or conversations\n"
    "({\"messages\": ...} / {\"conversations\": ...}, content a string or a list of text parts,\n"
    "as the server reads them); conversations go through the chat template.\n"
    "A plain prompt (--prompt, a string, {\"prompt\"}) goes to the model as it is, or, when --template\n"
    "is given, as a user's turn through that template, followed by the template's assistant header.\n";

FlagTable flag_table() {
  return generation_table(
      {.command = "generate",
       .description = kDescription,
       .groups = {{"Prompts and output",
                   {{.name = "--prompt", .value = "TEXT", .help = "one prompt"},
                    {.name = "--input_file", .value = "FILE", .help = "a file of prompts"},
                    {.name = "--output_file",
                     .value = "FILE",
                     .help = "writes one JSON line per prompt, in input order (prompt, output, output_ids, "
                             "finish_reason), atomically; a progress bar shows on a terminal"},
                    {.name = "--output_format",
                     .kind = FlagKind::kChoice,
                     .help = "text (one prompt streams as it is generated, several are each preceded by a line "
                             "'=== prompt I of N ==='), ids (a JSON array of the new token ids per prompt) or "
                             "jsonl (as --output_file writes)",
                     .default_value = "text",
                     .choices = {"text", "ids", "jsonl"}}}}},
       .one_of = {"--prompt", "--input_file"}});
}

struct Prompts {
  std::vector<std::string> shown;  // what the output files call the prompt
  std::vector<std::vector<std::int64_t>> ids;
};

// With --template a plain prompt is a user's turn, rendered through the template with the
// generation prompt after it; without, it goes to the model as it is.
PromptInput templated_if_asked(const Flags& flags, PromptInput input) {
  if (input.is_chat || !flags.count("--template")) return input;
  return {.is_chat = true, .text = {}, .messages = {{"user", std::move(input.text)}}};
}

Prompts encode_prompts(const Flags& flags, const models::Tokenizer& tokenizer, const models::ChatTemplate& chat) {
  std::vector<PromptInput> inputs;
  if (flags.count("--prompt"))
    inputs.push_back({false, flags.at("--prompt"), {}});
  else
    inputs = read_prompt_file(flags.at("--input_file"));
  Prompts prompts;
  for (const PromptInput& given : inputs) {
    const PromptInput input = templated_if_asked(flags, given);
    std::vector<models::TokenId> ids = input.is_chat
                                           ? chat.encode(tokenizer, input.messages, /*add_generation_prompt=*/true).ids
                                           : tokenizer.encode(input.text);
    prompts.shown.push_back(input.is_chat ? chat.render(input.messages, true) : input.text);
    prompts.ids.emplace_back(ids.begin(), ids.end());
  }
  return prompts;
}

std::string decoded(const models::Tokenizer& tokenizer, const std::vector<std::int64_t>& ids) {
  const std::vector<models::TokenId> narrowed(ids.begin(), ids.end());
  return tokenizer.decode(narrowed, /*skip_special_tokens=*/true);
}

nlohmann::ordered_json result_line(const std::string& prompt, const std::vector<std::int64_t>& ids,
                                   const models::Tokenizer& tokenizer, const models::GenerationOptions& options) {
  const auto& eos = options.eos_token_ids;
  const bool stopped = !ids.empty() && std::find(eos.begin(), eos.end(), ids.back()) != eos.end();
  return {{"prompt", prompt},
          {"output", decoded(tokenizer, ids)},
          {"output_ids", ids},
          {"finish_reason", stopped ? "stop" : "length"}};
}

void write_output_file(const std::string& path, const Prompts& prompts,
                       const std::vector<std::vector<std::int64_t>>& results, const models::Tokenizer& tokenizer,
                       const models::GenerationOptions& options) {
  AtomicFile file(path);
  for (std::size_t i = 0; i < results.size(); ++i)
    file.write(result_line(prompts.shown[i], results[i], tokenizer, options).dump() + "\n");
  file.commit();
}

// Answers of several prompts printed as text may span lines: a line naming the prompt goes
// before each. One prompt's answer is printed alone.
std::string text_separator(std::size_t index, std::size_t count) {
  if (count == 1) return "";
  return "=== prompt " + std::to_string(index + 1) + " of " + std::to_string(count) + " ===\n";
}

void print_results(const std::string& format, const Prompts& prompts,
                   const std::vector<std::vector<std::int64_t>>& results, const models::Tokenizer& tokenizer,
                   const models::GenerationOptions& options) {
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (format == "ids")
      std::cout << nlohmann::json(results[i]).dump() << "\n";
    else if (format == "jsonl")
      std::cout << result_line(prompts.shown[i], results[i], tokenizer, options).dump() << "\n";
    else
      std::cout << text_separator(i, results.size()) << decoded(tokenizer, results[i]) << "\n";
  }
}

// Counts finished prompts for the progress bar: a prompt is done at an eos id or its limit.
infer::TokenSink progress_sink(train::ProgressBar& bar, const std::vector<infer::GenerationRequest>& requests,
                               std::vector<std::int64_t>& produced, std::int64_t& finished) {
  return [&bar, &requests, &produced, &finished](std::size_t request, std::int64_t token) {
    const models::GenerationOptions& options = requests[request].options;
    const auto& eos = options.eos_token_ids;
    if (++produced[request] == options.max_new_tokens || std::find(eos.begin(), eos.end(), token) != eos.end())
      bar.update(++finished, 0.0);
  };
}

// One line on stderr when answers stopped at their length limit rather than at a stop token,
// saying what set the limit (the first cut answer's) and how to raise it.
void report_cut_answers(const Flags& flags, const models::CausalLM& model,
                        const std::vector<models::FittedAnswer>& fitted,
                        const std::vector<std::vector<std::int64_t>>& results) {
  std::size_t cut = 0, first = 0;
  for (std::size_t i = 0; i < results.size(); ++i)
    if (cut_at_limit(fitted[i].options, results[i]) && cut++ == 0) first = i;
  if (cut == 0) return;
  const std::string which = results.size() == 1
                                ? "the answer was"
                                : std::to_string(cut) + " of " + std::to_string(results.size()) + " answers were";
  std::cerr << "generate: " << which << " cut at the length limit (finish_reason \"length\"; the first at "
            << results[first].size() << " new tokens: " << limit_reason(fitted[first], flags, model) << ")\n";
}

// What every rank needs before it generates: the prompts, tokenized.
struct Inputs {
  std::string dir, format;
  std::unique_ptr<models::Tokenizer> tokenizer;
  std::unique_ptr<models::ChatTemplate> chat;
  Prompts prompts;
};

Inputs read_inputs(const Flags& flags) {
  Inputs in;
  in.dir = flags.at("--model_name_or_path");
  in.format = flags.text("--output_format");
  if (flags.count("--output_file")) require_writable_file(flags.at("--output_file"), "--output_file");
  in.chat = chat_template_from(flags, in.dir);  // first: an unknown --template is named before any file is read
  in.tokenizer = models::load_tokenizer(in.dir);
  in.prompts = encode_prompts(flags, *in.tokenizer, *in.chat);
  return in;
}

// An Engine's run, or a tensor-parallel rank's.
using RunRequests = std::function<std::vector<std::vector<std::int64_t>>(
    const std::vector<infer::GenerationRequest>& requests, const infer::TokenSink& sink)>;

// Generates for every prompt with the model's generation settings through `run`. Only when
// `shows` (one device, or rank 0 of tensor parallelism) are the results streamed, printed or written.
void generate(const Flags& flags, const Inputs& in, const models::CausalLM& model, const RunRequests& run, bool shows) {
  models::GenerationOptions options = generation_options_from(flags, in.dir, model, *in.tokenizer, in.chat.get());
  std::vector<infer::GenerationRequest> requests;
  std::vector<models::FittedAnswer> fitted;
  for (const auto& ids : in.prompts.ids) {
    fitted.push_back(answer_options(options, model, ids.size()));
    requests.push_back({ids, fitted.back().options});
  }
  if (!shows) {
    run(requests, {});
    return;
  }
  const bool to_file = flags.count("--output_file") != 0;
  const bool streamed = !to_file && in.format == "text" && requests.size() == 1;
  models::StreamDecoder stream(*in.tokenizer, /*skip_special_tokens=*/true);
  train::ProgressBar bar(0, static_cast<std::int64_t>(requests.size()), to_file && isatty(STDERR_FILENO));
  std::vector<std::int64_t> produced(requests.size(), 0);
  std::int64_t finished = 0;
  infer::TokenSink sink = progress_sink(bar, requests, produced, finished);
  if (streamed) sink = [&stream](std::size_t, std::int64_t token) { std::cout << stream.put(token) << std::flush; };

  std::vector<std::vector<std::int64_t>> results = run(requests, sink);
  if (streamed) {
    std::cout << stream.finish() << "\n";
  } else if (to_file) {
    bar.finish();
    write_output_file(flags.at("--output_file"), in.prompts, results, *in.tokenizer, options);
    std::cerr << "wrote " << results.size() << " results to " << flags.at("--output_file") << "\n";
  } else {
    print_results(in.format, in.prompts, results, *in.tokenizer, options);
  }
  report_cut_answers(flags, model, fitted, results);
}

int generate_text(Flags& flags) {
  const Inputs in = read_inputs(flags);
  if (tensor_parallel_size(flags) > 1) {
    run_tensor_parallel_from_flags(flags, [&](infer::TensorParallelRank& rank) {
      infer::TensorParallelEngine engine(rank.shard, rank.comm, tensor_parallel_options_from(flags, rank));
      auto run = [&](const auto& requests, const auto& sink) { return engine.run(requests, sink); };
      generate(flags, in, rank.shard, run, rank.comm.rank() == 0);
    });
    return 0;
  }
  models::CausalLM model = load_generation_model(flags);
  infer::Engine engine(model, engine_options_from(flags));
  generate(
      flags, in, model, [&](const auto& requests, const auto& sink) { return engine.run(requests, sink); }, true);
  return 0;
}

int run_generate(const std::vector<std::string>& args) {
  return run_generation_command(args, flag_table(), generate_text);
}

const Registration registration{
    {"generate", "continue prompts with a model (greedy or sampled, batched)", run_generate, flag_table}};

}  // namespace
}  // namespace zt::cli
