// `zerotune evaluate`: the loss and perplexity of a model on a data file in any format
// `zerotune train --validation_file` reads, encoded with training's rules (chat template,
// labels on the replies, --max_length and --overlong_samples) and scored by the trainer's own
// evaluation (train/evaluation.h), so it reports the eval_loss the trainer logged for the same
// file and model. Plain-text files are scored as run_clm.py --do_eval scores them: every token
// predicted, no eos appended.
#include <cmath>
#include <iostream>
#include <optional>

#include "cli/command.h"
#include "cli/flags.h"
#include "cli/four_bit_base.h"
#include "cli/generation_flags.h"
#include "runtime/enum_names.h"
#include "runtime/error.h"
#include "runtime/log.h"
#include "runtime/usage_error.h"
#include "text/tokenizer/tokenizer.h"
#include "train/args/training_arguments.h"
#include "train/data/dataset.h"
#include "train/data/sample_encoding.h"
#include "train/data/sample_truncation.h"
#include "train/evaluation.h"

namespace zt::cli {
namespace {

constexpr const char* kDescription =
    "Prints {\"eval_loss\", \"perplexity\", \"eval_tokens\", \"eval_samples\"} as JSON: the mean next-token\n"
    "loss over the label tokens of F, as `zerotune train --validation_file F` evaluates it with the same\n"
    "flags. F is what training reads (alpaca, ShareGPT or OpenAI messages, or {\"text\": ...}; a JSON\n"
    "array or JSON Lines). Conversations go through the chat template with labels on the replies;\n"
    "a plain text is scored as run_clm does, every token predicted (no eos appended).\n";

FlagTable flag_table() {
  const train::TrainingArguments training;  // evaluate's defaults are training's
  FlagGroup model = model_flags();
  for (Flag& flag : model.flags)
    if (flag.name == "--dtype")
      flag.help +=
          "; the trainer evaluates in its working dtype, so pass --dtype float16 for a model trained with "
          "--fp16";
  return {.command = "evaluate",
          .description = kDescription,
          .groups = {{"Data",
                      {{.name = "--validation_file", .value = "F", .help = "the data to score"},
                       template_flag(),
                       with_help(enable_thinking_flag(),
                                 "false: Qwen3's templates without thinking, as training "
                                 "with it"),
                       {.name = "--max_length",
                        .kind = FlagKind::kPositiveInteger,
                        .value = "N",
                        .help = "longest sample in tokens, as training",
                        .default_value = std::to_string(training.max_length),
                        .aliases = {"--cutoff_len"}},
                       {.name = "--overlong_samples",
                        .kind = FlagKind::kChoice,
                        .help = "truncate (cut the prompt, keep the last reply) or skip",
                        .default_value = name_of(training.overlong_samples),
                        .choices = enum_name_list<train::Overlong>()},
                       {.name = "--train_on_prompt",
                        .kind = FlagKind::kBool,
                        .help = "score every token of a conversation, not only the replies"},
                       {.name = "--per_device_eval_batch_size",
                        .kind = FlagKind::kPositiveInteger,
                        .value = "N",
                        .help = "samples per forward, as training",
                        .default_value = std::to_string(training.per_device_eval_batch_size)}}},
                     model,
                     four_bit_flags()},
          .required = {"--model_name_or_path", "--validation_file"}};
}

train::EncodeOptions encode_options(const Flags& flags) {
  const train::TrainingArguments training;  // evaluate's defaults are training's
  train::EncodeOptions options{.max_length = flags.integer("--max_length"),
                               .train_on_prompt = flags.is_true("--train_on_prompt"),
                               .overlong = training.overlong_samples};
  if (flags.count("--overlong_samples"))
    options.overlong = *enum_from_name<train::Overlong>(flags.at("--overlong_samples"));
  ZT_REQUIRE_USAGE(options.max_length > 1, "--max_length must be at least 2: one token predicts the next");
  return options;
}

// A plain text as run_clm scores it: the tokenizer's own special tokens and every token a
// label, with no eos appended (training appends one to teach where a document ends).
std::optional<train::TokenizedSample> scored_text(const std::string& text, const models::Tokenizer& tokenizer,
                                                  const train::EncodeOptions& options, train::EncodedDataset& out) {
  const std::vector<models::TokenId> ids = tokenizer.encode(text);
  const train::TokenizedSample sample{.ids = {ids.begin(), ids.end()}, .labels = {ids.begin(), ids.end()}};
  const auto max_length = static_cast<std::size_t>(options.max_length);
  if (sample.ids.size() <= max_length) return sample;
  if (options.overlong == train::Overlong::kSkip) {
    ++out.skipped;
    return std::nullopt;
  }
  ++out.truncated;
  out.cut.text += sample.ids.size() - max_length;
  return train::truncate_tail(sample, max_length);
}

train::EncodedDataset encode(const train::Dataset& dataset, const Flags& flags, const models::Tokenizer& tokenizer,
                             const train::EncodeOptions& options) {
  if (dataset.format != train::DataFormat::kText) {
    const auto chat_template = chat_template_from(flags, flags.at("--model_name_or_path"));
    return train::encode_dataset(dataset, *chat_template, tokenizer, options);
  }
  train::EncodedDataset encoded;
  for (const std::string& text : dataset.texts)
    if (auto sample = scored_text(text, tokenizer, options, encoded); sample && sample->ids.size() > 1)
      encoded.samples.push_back(std::move(*sample));
  return encoded;
}

// Samples cut, skipped or dropped on the way, as training logs them.
void report_encoding(const std::string& path, const train::EncodedDataset& encoded, std::int64_t max_length) {
  if (encoded.truncated) ZT_LOG(kWarn, train::truncation_summary(path, encoded, max_length));
  if (encoded.skipped)
    ZT_LOG(kWarn, path << ": " << encoded.skipped << " sample(s) skipped: longer than --max_length " << max_length
                       << " (--overlong_samples skip)");
  if (encoded.dropped) ZT_LOG(kWarn, path << ": " << encoded.dropped << " sample(s) left out: no token to predict");
}

int evaluate_model(Flags& flags) {
  const std::string& path = flags.at("--validation_file");
  const train::EncodeOptions options = encode_options(flags);
  const std::int64_t batch_size =
      integer_flag_or(flags, "--per_device_eval_batch_size", train::TrainingArguments{}.per_device_eval_batch_size);
  std::unique_ptr<models::Tokenizer> tokenizer = models::load_tokenizer(flags["--model_name_or_path"]);
  const train::EncodedDataset encoded = encode(train::load_dataset(path), flags, *tokenizer, options);
  report_encoding(path, encoded, options.max_length);
  ZT_REQUIRE(!encoded.samples.empty(), path +
                                           ": no sample has a token to predict (check --max_length and "
                                           "--overlong_samples)");
  const Device device = check_run_device(flags);
  const models::CausalLM model = load_model_maybe_four_bit(flags, device, dtype_from_flags(flags, device));
  const train::EvaluationLoss loss = train::evaluation_loss(model, encoded.samples, batch_size, options.max_length);
  nlohmann::ordered_json report{{"eval_loss", loss.mean()},
                                {"perplexity", std::exp(loss.mean())},
                                {"eval_tokens", loss.label_tokens},
                                {"eval_samples", encoded.samples.size()}};
  std::cout << report.dump(2) << "\n";
  return 0;
}

int run_evaluate(const std::vector<std::string>& args) {
  return run_with_flags(args, flag_table(), [](Flags& flags) {
    resolve_model_flag(flags);
    return evaluate_model(flags);
  });
}

const Registration registration{
    {"evaluate", "loss and perplexity of a model on a data file, as training evaluates", run_evaluate, flag_table}};

}  // namespace
}  // namespace zt::cli
