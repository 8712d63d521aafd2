#include "train/data/sample_encoding.h"

#include <algorithm>
#include <exception>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>

#include "runtime/error.h"
#include "train/data/sample_truncation.h"

namespace zt::train {
namespace {

struct EncodeSettings {
  const models::ChatTemplate& chat_template;
  const models::Tokenizer& tokenizer;
  const EncodeOptions& options;
};

// Where the last reply starts: the last run of answer tokens, which ends the conversation
// (Qwen's "\n" after <|im_end|> aside). Without answer tokens all of it is prompt.
std::size_t last_reply_begin(const models::EncodedConversation& encoded) {
  std::size_t end = encoded.answer.size();
  while (end > 0 && !encoded.answer[end - 1]) --end;
  std::size_t begin = end;
  while (begin > 0 && encoded.answer[begin - 1]) --begin;
  return end == 0 ? encoded.answer.size() : begin;
}

// The tokens the template writes between the last prompt message and the reply: what the
// conversation without its reply gains from a generation prompt.
std::size_t reply_header_length(const Conversation& conversation, const EncodeSettings& settings) {
  const std::vector<models::ChatMessage> prompt(conversation.messages.begin(), conversation.messages.end() - 1);
  auto length = [&](bool generation_prompt) {
    return settings.chat_template.encode(settings.tokenizer, prompt, generation_prompt, conversation.tools).ids.size();
  };
  const std::size_t with = length(true);
  const std::size_t without = length(false);
  return with > without ? with - without : 0;
}

// The conversation's ids and labels, and where its last reply begins.
std::pair<TokenizedSample, ReplySpan> encode_conversation(const Conversation& conversation,
                                                          const EncodeSettings& settings) {
  const models::EncodedConversation encoded =
      settings.chat_template.encode(settings.tokenizer, conversation.messages, false, conversation.tools);
  TokenizedSample sample;
  for (std::size_t i = 0; i < encoded.ids.size(); ++i) {
    sample.ids.push_back(encoded.ids[i]);
    sample.labels.push_back(encoded.answer[i] || settings.options.train_on_prompt ? encoded.ids[i] : kIgnoreIndex);
  }
  ReplySpan reply{last_reply_begin(encoded), 0};
  // Only a sample that will be cut pays for the header's two extra encodings.
  if (static_cast<std::int64_t>(sample.ids.size()) > settings.options.max_length)
    reply.header = std::min(reply_header_length(conversation, settings), reply.begin);
  return {std::move(sample), reply};
}

// The same, with a template's refusal (a role or tools it has no place for) naming the sample.
std::pair<TokenizedSample, ReplySpan> encode_sample(const Conversation& conversation, const EncodeSettings& settings) {
  try {
    return encode_conversation(conversation, settings);
  } catch (const Error& e) {
    if (conversation.source.empty()) throw;
    fail(conversation.source + ": " + e.what());
  }
}

// The sample of dataset entry `s`, cut to max_length; nullopt when it is skipped instead.
std::optional<TokenizedSample> encode_one(const Dataset& dataset, std::size_t s, const EncodeSettings& settings,
                                          EncodedDataset& out) {
  const auto max_length = static_cast<std::size_t>(settings.options.max_length);
  TokenizedSample sample;
  ReplySpan reply;
  if (dataset.format == DataFormat::kText)
    sample = encode_text(dataset.texts[s], settings.tokenizer);
  else
    std::tie(sample, reply) = encode_sample(dataset.samples[s], settings);
  if (sample.ids.size() <= max_length) return sample;
  if (settings.options.overlong == Overlong::kSkip) {
    ++out.skipped;
    return std::nullopt;
  }
  ++out.truncated;
  return dataset.format == DataFormat::kText ? truncate_tail(sample, max_length)
                                             : truncate_keeping_reply(sample, reply, max_length);
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

TokenizedSample encode_text(const std::string& text, const models::Tokenizer& tokenizer) {
  TokenizedSample sample;
  sample.ids = tokenizer.encode(text, /*add_special_tokens=*/true);
  const std::optional<models::TokenId> eos = tokenizer.special_ids().eos;
  if (eos && (sample.ids.empty() || sample.ids.back() != *eos)) sample.ids.push_back(*eos);
  sample.labels = sample.ids;
  return sample;
}

std::int32_t padding_token(const models::Tokenizer& tokenizer) {
  const models::SpecialTokenIds& special = tokenizer.special_ids();
  return special.pad.value_or(special.eos.value_or(0));
}

EncodedDataset encode_dataset(const Dataset& dataset, const models::ChatTemplate& chat_template,
                              const models::Tokenizer& tokenizer, const EncodeOptions& options) {
  const int workers = options.workers;
  ZT_REQUIRE(workers >= 0, "encode_dataset: workers is " + std::to_string(workers) + "; it must be >= 0");
  ZT_REQUIRE(options.max_length > 1,
             "encode_dataset: max_length is " + std::to_string(options.max_length) + "; it must be > 1");
  const EncodeSettings settings{chat_template, tokenizer, options};
  const std::size_t count = dataset.size();
  const std::size_t parts =
      std::clamp<std::size_t>(static_cast<std::size_t>(workers), 1, std::max<std::size_t>(count, 1));
  if (parts == 1) {
    EncodedDataset out;
    encode_range(dataset, 0, count, settings, out);
    return out;
  }
  // Contiguous ranges, concatenated in order afterwards, keep the samples' order.
  std::vector<EncodedDataset> results(parts);
  std::vector<std::exception_ptr> errors(parts);
  std::vector<std::thread> threads;
  for (std::size_t p = 0; p < parts; ++p)
    threads.emplace_back([&, p] {
      try {
        encode_range(dataset, count * p / parts, count * (p + 1) / parts, settings, results[p]);
      } catch (...) {
        errors[p] = std::current_exception();
      }
    });
  for (std::thread& thread : threads) thread.join();
  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);  // the first sample's error, as one thread would report
  EncodedDataset out;
  for (EncodedDataset& part : results) {
    out.truncated += part.truncated;
    out.skipped += part.skipped;
    out.dropped += part.dropped;
    std::move(part.samples.begin(), part.samples.end(), std::back_inserter(out.samples));
  }
  return out;
}

}  // namespace zt::train
