// `zerotune evaluate`: the loss and perplexity of a model on a JSONL file of {"text": ...}
// lines, as `run_clm.py --do_eval` reports them (mean next-token cross-entropy over every
// predicted token, perplexity = exp of it).
#include <cmath>
#include <fstream>
#include <iostream>

#include "autograd/grad_mode.h"
#include "cli/command.h"
#include "cli/flags.h"
#include "models/batch.h"
#include "models/token_loss.h"
#include "runtime/error.h"
#include "text/tokenizer/tokenizer.h"

namespace zt::cli {
namespace {

constexpr const char* kUsage =
    "usage: zerotune evaluate --model_name_or_path DIR --validation_file F [--max_length N]\n"
    "                         [--adapter_name_or_path ADAPTER] [--ptuning_checkpoint DIR]\n"
    "                         [--device cpu|cuda|cuda:N] [--dtype float32|bfloat16|...]\n\n"
    "Prints {\"eval_loss\", \"perplexity\", \"eval_tokens\", \"eval_samples\"} as JSON for the texts of F\n"
    "(one JSON object with a \"text\" string per line), each tokenized as the model's tokenizer does\n"
    "with its special tokens and cut to --max_length tokens (default 2048).\n"
    "  --adapter_name_or_path  a PEFT adapter folder applied to the model: LoRA or prefix tuning\n"
    "  --ptuning_checkpoint    a P-Tuning v2 prefix (zerotune train --finetuning_type ptuning);\n"
    "                          a PEFT prefix-tuning folder is also taken here\n"
    "  --device   default cuda when a GPU is usable, else cpu\n"
    "  --dtype    default bfloat16 on a GPU, float32 on the CPU\n";

constexpr std::int64_t kBatchTokens = 8192;

FlagSpec flag_spec() {
  FlagSpec spec{
      .command = "evaluate", .value_flags = kModelFlags, .required = {"--model_name_or_path", "--validation_file"}};
  spec.value_flags.insert({"--validation_file", "--max_length"});
  return spec;
}

std::int64_t parse_count(const std::string& name, const std::string& text) {
  try {
    std::size_t used = 0;
    long long value = std::stoll(text, &used);
    if (used == text.size() && value > 0) return value;
  } catch (const std::exception&) {
  }
  fail(name + " must be a positive integer, got '" + text + "'");
}

// The token ids of every line's "text", each cut to max_length.
std::vector<std::vector<std::int64_t>> read_texts(const std::string& path, const models::Tokenizer& tokenizer,
                                                  std::int64_t max_length) {
  std::ifstream in(path);
  if (!in) fail("cannot open validation file '" + path + "'");
  std::vector<std::vector<std::int64_t>> sequences;
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string where = path + ":" + std::to_string(number);
    nlohmann::json json;
    try {
      json = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error& e) {
      fail(where + ": not valid JSON: " + e.what());
    }
    if (!json.is_object() || !json.contains("text") || !json["text"].is_string())
      fail(where + ": expected an object with a \"text\" string");
    std::vector<models::TokenId> ids = tokenizer.encode(json["text"].get<std::string>());
    if (static_cast<std::int64_t>(ids.size()) > max_length) ids.resize(static_cast<std::size_t>(max_length));
    sequences.emplace_back(ids.begin(), ids.end());
  }
  return sequences;
}

struct Totals {
  double loss_sum = 0.0;
  std::int64_t tokens = 0;
};

void evaluate_batch(const models::CausalLM& model, const std::vector<std::vector<std::int64_t>>& sequences,
                    Totals& totals) {
  auto labels = models::next_token_labels(sequences);
  std::int64_t predicted = 0;
  for (const auto& sequence : sequences) predicted += static_cast<std::int64_t>(sequence.size()) - 1;
  if (predicted == 0) return;
  models::PackedBatch batch = models::pack_sequences(sequences, labels, model.device());
  totals.loss_sum += models::summed_token_loss(model, batch).data().item();
  totals.tokens += predicted;
}

int evaluate_model(Flags& flags) {
  const std::int64_t max_length =
      flags.count("--max_length") ? parse_count("--max_length", flags["--max_length"]) : 2048;
  std::unique_ptr<models::Tokenizer> tokenizer = models::load_tokenizer(flags["--model_name_or_path"]);
  models::CausalLM model = load_model_from_flags(flags);
  auto sequences = read_texts(flags["--validation_file"], *tokenizer, max_length);
  if (sequences.empty()) fail("validation file '" + flags["--validation_file"] + "' has no texts");

  autograd::NoGradGuard no_recording;
  Totals totals;
  std::vector<std::vector<std::int64_t>> batch;
  std::int64_t batch_tokens = 0;
  for (auto& sequence : sequences) {
    if (sequence.empty()) continue;
    if (batch_tokens + static_cast<std::int64_t>(sequence.size()) > kBatchTokens && !batch.empty()) {
      evaluate_batch(model, batch, totals);
      batch.clear();
      batch_tokens = 0;
    }
    batch_tokens += static_cast<std::int64_t>(sequence.size());
    batch.push_back(std::move(sequence));
  }
  if (!batch.empty()) evaluate_batch(model, batch, totals);
  if (totals.tokens == 0) fail("no text in '" + flags["--validation_file"] + "' has two tokens to predict from");

  double loss = totals.loss_sum / static_cast<double>(totals.tokens);
  nlohmann::ordered_json report{{"eval_loss", loss},
                                {"perplexity", std::exp(loss)},
                                {"eval_tokens", totals.tokens},
                                {"eval_samples", sequences.size()}};
  std::cout << report.dump(2) << "\n";
  return 0;
}

int run_evaluate(const std::vector<std::string>& args) {
  return run_with_flags(args, flag_spec(), kUsage, evaluate_model);
}

const Registration registration{{"evaluate", "loss and perplexity of a model on a JSONL text file", run_evaluate}};

}  // namespace
}  // namespace zt::cli
