#include "train/data/sample_encoding.h"

#include <algorithm>
#include <exception>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/error.h"
#include "train/data/sample_truncation.h"

namespace zt::train {
namespace {

// The turns of an encoded conversation, as LLaMA-Factory pairs its messages: each prompt
// is the run of untrained tokens before a run of answer tokens, its reply; what follows the
// last reply (Qwen's "\n" after <|im_end|> in the model's own template) belongs to it. A
// conversation without an answer is one prompt. `length` leaves out the kept tail.
std::vector<Turn> turns_of(const models::EncodedConversation& encoded, std::size_t length) {
  std::vector<Turn> turns;
  std::size_t at = 0;
  while (at < length) {
    Turn turn{.prompt_begin = at};
    while (at < length && !encoded.answer[at]) ++at;
    turn.reply_begin = at;
    while (at < length && encoded.answer[at]) ++at;
    turn.end = at;
    if (turn.reply_begin == turn.end && !turns.empty()) {
      turns.back().end = at;  // untrained tokens after the last reply
      break;
    }
    turns.push_back(turn);
  }
  return turns;
}

// Leaves the replies of loss_weight 0 out of the loss: their tokens up to the next reply (the
// eos some templates label on the next turn's first token included) or to the end.
void untrain_replies(const Conversation& conversation, EncodedChatSample& out, bool train_on_prompt) {
  ZT_REQUIRE(!train_on_prompt,
             "a message with \"loss_weight\": 0 and --train_on_prompt, which trains every message; "
             "drop one of them");
  std::size_t replies = 0;
  for (const models::ChatMessage& message : conversation.messages) replies += message.role == "assistant";
  ZT_REQUIRE(out.turns.size() == replies,
             "the chat template writes " + std::to_string(out.turns.size()) + " trained stretches for " +
                 std::to_string(replies) +
                 " assistant messages, so the replies of \"loss_weight\": 0 cannot be told apart; drop the key");
  for (std::size_t reply : conversation.untrained_replies) {
    const std::size_t begin = out.turns[reply].reply_begin;
    const std::size_t end = reply + 1 < out.turns.size() ? out.turns[reply + 1].reply_begin : out.sample.labels.size();
    std::fill(out.sample.labels.begin() + static_cast<std::ptrdiff_t>(begin),
              out.sample.labels.begin() + static_cast<std::ptrdiff_t>(end), kIgnoreIndex);
  }
}

EncodedChatSample encode_conversation(const Conversation& conversation, const models::ChatTemplate& chat_template,
                                      const models::Tokenizer& tokenizer, bool train_on_prompt) {
  const models::EncodedConversation encoded =
      chat_template.encode(tokenizer, conversation.messages, false, conversation.tools);
  EncodedChatSample out;
  const std::vector<std::int64_t> labels = encoded.labels();
  for (std::size_t i = 0; i < encoded.ids.size(); ++i) {
    out.sample.ids.push_back(encoded.ids[i]);
    out.sample.labels.push_back(train_on_prompt ? encoded.ids[i] : static_cast<std::int32_t>(labels[i]));
  }
  out.kept_tail = encoded.kept_tail;
  out.turns = turns_of(encoded, encoded.ids.size() - encoded.kept_tail);
  if (!conversation.untrained_replies.empty()) untrain_replies(conversation, out, train_on_prompt);
  return out;
}

// A conversation over max_length cut turn by turn within what its kept tail leaves, then the
// tail: LLaMA-Factory counts its efficient eos before the turns and appends it after them.
TokenizedSample cut_conversation(const EncodedChatSample& encoded, std::size_t max_length, CutTokens& cut) {
  const TokenizedSample& whole = encoded.sample;
  const std::size_t body = whole.ids.size() - encoded.kept_tail;
  TokenizedSample head;
  head.ids.assign(whole.ids.begin(), whole.ids.begin() + static_cast<std::ptrdiff_t>(body));
  head.labels.assign(whole.labels.begin(), whole.labels.begin() + static_cast<std::ptrdiff_t>(body));
  Truncated truncated = truncate_turns(head, encoded.turns, max_length - std::min(encoded.kept_tail, max_length));
  cut += truncated.cut;
  TokenizedSample& out = truncated.sample;
  out.ids.insert(out.ids.end(), whole.ids.begin() + static_cast<std::ptrdiff_t>(body), whole.ids.end());
  out.labels.insert(out.labels.end(), whole.labels.begin() + static_cast<std::ptrdiff_t>(body), whole.labels.end());
  return std::move(out);
}

// The sample of dataset entry `s`, cut to max_length; nullopt when it is skipped instead.
std::optional<TokenizedSample> encode_one(const Dataset& dataset, std::size_t s, const EncodeSettings& settings,
                                          EncodedDataset& out) {
  const auto max_length = static_cast<std::size_t>(settings.options.max_length);
  EncodedChatSample encoded;
  if (dataset.format == DataFormat::kText)
    encoded.sample = encode_text(dataset.texts[s], settings.tokenizer);
  else
    encoded = encode_chat_sample(dataset.samples[s], settings.chat_template, settings.tokenizer,
                                 settings.options.train_on_prompt);
  TokenizedSample& sample = encoded.sample;
  if (sample.ids.size() <= max_length) return std::move(sample);
  if (settings.options.overlong == Overlong::kSkip) {
    ++out.skipped;
    return std::nullopt;
  }
  ++out.truncated;
  if (dataset.format == DataFormat::kText) {
    out.cut.text += sample.ids.size() - max_length;
    return truncate_tail(sample, max_length);
  }
  return cut_conversation(encoded, max_length, out.cut);
}

// Encodes samples [begin, end) into `out`, in order.
void encode_range(const Dataset& dataset, std::size_t begin, std::size_t end, const EncodeSettings& settings,
                  EncodedDataset& out) {
  for (std::size_t s = begin; s < end; ++s) {
    std::optional<TokenizedSample> sample = encode_one(dataset, s, settings, out);
    if (!sample) continue;
    // Labels shift by one inside a sample: only labels after the first token teach anything.
    bool learns = false;
    for (std::size_t i = 1; i < sample->labels.size(); ++i) learns |= sample->labels[i] != kIgnoreIndex;
    if (!learns) {
      ++out.dropped;
      continue;
    }
    out.samples.push_back(std::move(*sample));
  }
}

}  // namespace

EncodedChatSample encode_chat_sample(const Conversation& conversation, const models::ChatTemplate& chat_template,
                                     const models::Tokenizer& tokenizer, bool train_on_prompt) {
  try {
    return encode_conversation(conversation, chat_template, tokenizer, train_on_prompt);
  } catch (const Error& e) {
    if (conversation.source.empty()) throw;
    fail(conversation.source + ": " + e.what());
  }
}

std::size_t encoding_parts(std::size_t count, int workers) {
  ZT_REQUIRE(workers >= 0, "encoding: workers is " + std::to_string(workers) + "; it must be >= 0");
  return std::clamp<std::size_t>(static_cast<std::size_t>(workers), 1, std::max<std::size_t>(count, 1));
}

void run_in_parts(std::size_t count, std::size_t parts,
                  const std::function<void(std::size_t part, std::size_t begin, std::size_t end)>& work) {
  if (parts == 1) {
    work(0, 0, count);
    return;
  }
  std::vector<std::exception_ptr> errors(parts);
  std::vector<std::thread> threads;
  for (std::size_t p = 0; p < parts; ++p)
    threads.emplace_back([&, p] {
      try {
        work(p, count * p / parts, count * (p + 1) / parts);
      } catch (...) {
        errors[p] = std::current_exception();
      }
    });
  for (std::thread& thread : threads) thread.join();
  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);  // the first sample's error, as one thread would report
}

TokenizedSample encode_text(const std::string& text, const models::Tokenizer& tokenizer) {
  TokenizedSample sample;
  sample.ids = tokenizer.encode(text, /*add_special_tokens=*/true);
  const std::optional<models::TokenId> eos = tokenizer.special_ids().eos;
  if (eos && (sample.ids.empty() || sample.ids.back() != *eos)) sample.ids.push_back(*eos);
  sample.labels = sample.ids;
  return sample;
}

std::string truncation_summary(const std::string& path, const EncodedDataset& encoded, std::int64_t max_length) {
  if (encoded.truncated == 0) return "";
  const CutTokens& cut = encoded.cut;
  const bool turns = cut.prompt + cut.reply > 0;
  std::vector<std::string> parts;
  if (turns)
    parts.push_back(
        std::to_string(cut.prompt) + " prompt tokens and " + std::to_string(cut.reply) + " reply tokens cut" +
        (cut.dropped_turns > 0 ? ", of which " + std::to_string(cut.dropped_turns) + " later turn(s) dropped whole"
                               : ""));
  if (cut.text > 0) parts.push_back(std::to_string(cut.text) + " tokens of text tails cut");
  std::string line = path + ": " + std::to_string(encoded.truncated) + " sample(s) truncated to --max_length " +
                     std::to_string(max_length);
  for (std::size_t i = 0; i < parts.size(); ++i) line += (i == 0 ? ": " : "; ") + parts[i];
  if (turns)
    line +=
        " (each turn keeps the start of its prompt and of its reply, as LLaMA-Factory's cutoff_len does; "
        "--overlong_samples skip leaves such samples out)";
  return line;
}

std::int32_t padding_token(const models::Tokenizer& tokenizer) {
  const models::SpecialTokenIds& special = tokenizer.special_ids();
  return special.pad.value_or(special.eos.value_or(0));
}

EncodedDataset encode_dataset(const Dataset& dataset, const models::ChatTemplate& chat_template,
                              const models::Tokenizer& tokenizer, const EncodeOptions& options) {
  ZT_REQUIRE(options.max_length > 1,
             "encode_dataset: max_length is " + std::to_string(options.max_length) + "; it must be > 1");
  if (options.train_on_prompt && dataset.format != DataFormat::kText)
    if (const std::string refusal = chat_template.train_on_prompt_refusal(); !refusal.empty())
      fail("--train_on_prompt: " + refusal);
  const EncodeSettings settings{chat_template, tokenizer, options};
  const std::size_t count = dataset.size();
  // Contiguous ranges, concatenated in order afterwards, keep the samples' order.
  std::vector<EncodedDataset> results(encoding_parts(count, options.workers));
  run_in_parts(count, results.size(), [&](std::size_t part, std::size_t begin, std::size_t end) {
    encode_range(dataset, begin, end, settings, results[part]);
  });
  EncodedDataset out;
  for (EncodedDataset& part : results) {
    out.truncated += part.truncated;
    out.cut += part.cut;
    out.skipped += part.skipped;
    out.dropped += part.dropped;
    std::move(part.samples.begin(), part.samples.end(), std::back_inserter(out.samples));
  }
  return out;
}

}  // namespace zt::train
