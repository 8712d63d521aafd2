#include "train/sample_encoding.h"

#include <algorithm>
#include <exception>
#include <iterator>
#include <string>
#include <thread>

#include "runtime/error.h"

namespace zt::train {
namespace {

struct EncodeSettings {
  const models::ChatTemplate& chat_template;
  const models::Tokenizer& tokenizer;
  std::int64_t max_length;
  bool train_on_prompt;
};

// Encodes samples [begin, end) into `out`, in order.
void encode_range(const Dataset& dataset, std::size_t begin, std::size_t end, const EncodeSettings& settings,
                  EncodedDataset& out) {
  for (std::size_t s = begin; s < end; ++s) {
    std::vector<models::ChatMessage> messages;
    for (const Message& m : dataset.samples[s].messages) messages.push_back({m.role, m.content});
    models::EncodedConversation encoded = settings.chat_template.encode(settings.tokenizer, messages, false);
    TokenizedSample sample;
    for (std::size_t i = 0; i < encoded.ids.size(); ++i) {
      sample.ids.push_back(encoded.ids[i]);
      sample.labels.push_back(encoded.answer[i] || settings.train_on_prompt ? encoded.ids[i] : kIgnoreIndex);
    }
    if (static_cast<std::int64_t>(sample.ids.size()) > settings.max_length) {
      sample.ids.resize(static_cast<std::size_t>(settings.max_length));
      sample.labels.resize(static_cast<std::size_t>(settings.max_length));
      ++out.truncated;
    }
    // Labels shift by one inside a sample: only labels after the first token teach anything.
    bool learns = false;
    for (std::size_t i = 1; i < sample.labels.size(); ++i) learns |= sample.labels[i] != kIgnoreIndex;
    if (!learns) {
      ++out.dropped;
      continue;
    }
    out.samples.push_back(std::move(sample));
  }
}

}  // namespace

EncodedDataset encode_dataset(const Dataset& dataset, const models::ChatTemplate& chat_template,
                              const models::Tokenizer& tokenizer, std::int64_t max_length, bool train_on_prompt,
                              int workers) {
  ZT_REQUIRE(workers >= 0, "encode_dataset: workers is " + std::to_string(workers) + "; it must be >= 0");
  const EncodeSettings settings{chat_template, tokenizer, max_length, train_on_prompt};
  const std::size_t count = dataset.samples.size();
  const std::size_t parts = std::clamp<std::size_t>(static_cast<std::size_t>(workers), 1, std::max<std::size_t>(count, 1));
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
    out.dropped += part.dropped;
    std::move(part.samples.begin(), part.samples.end(), std::back_inserter(out.samples));
  }
  return out;
}

}  // namespace zt::train
