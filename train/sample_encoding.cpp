#include "train/sample_encoding.h"

#include "runtime/error.h"

namespace zt::train {

EncodedDataset encode_dataset(const Dataset& dataset, const models::ChatTemplate& chat_template,
                              const models::Tokenizer& tokenizer, std::int64_t max_length, bool train_on_prompt) {
  EncodedDataset out;
  for (const Conversation& conversation : dataset.samples) {
    std::vector<models::ChatMessage> messages;
    for (const Message& m : conversation.messages) messages.push_back({m.role, m.content});
    models::EncodedConversation encoded = chat_template.encode(tokenizer, messages, false);
    TokenizedSample sample;
    for (std::size_t i = 0; i < encoded.ids.size(); ++i) {
      sample.ids.push_back(encoded.ids[i]);
      sample.labels.push_back(encoded.answer[i] || train_on_prompt ? encoded.ids[i] : kIgnoreIndex);
    }
    if (static_cast<std::int64_t>(sample.ids.size()) > max_length) {
      sample.ids.resize(static_cast<std::size_t>(max_length));
      sample.labels.resize(static_cast<std::size_t>(max_length));
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
  return out;
}

}  // namespace zt::train
