// Datasets to training samples. A conversation goes through the chat template with its
// tools: ids, and labels that are the ids on the assistant's replies and tool calls (their
// end-of-turn token included; every token with --train_on_prompt, which LLaMA-Factory's
// efficient-eos templates refuse), eos where such a template trains it, and -100 elsewhere; a
// template's refusal (tools it has no format for) names the sample. A plain text is tokenized as
// run_clm does, then ends with eos, and every token is trained. Samples longer than
// --max_length are cut as LLaMA-Factory cuts them to cutoff_len (train/data/sample_truncation.h)
// or skipped. With
// workers > 0 (--dataloader_num_workers) the samples are encoded on that many threads; the
// result is the same, in the same order.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "text/chat_template/chat_template.h"
#include "train/data/batching.h"
#include "train/data/dataset.h"
#include "train/data/sample_truncation.h"

namespace zt::train {

// What happens to a sample longer than max_length (--overlong_samples).
enum class Overlong { kTruncate, kSkip };

struct EncodeOptions {
  std::int64_t max_length = 1024;
  bool train_on_prompt = false;
  Overlong overlong = Overlong::kTruncate;
  int workers = 0;
};

struct EncodedDataset {
  std::vector<TokenizedSample> samples;
  std::size_t truncated = 0;  // samples cut to max_length
  CutTokens cut;              // what the cuts took away
  std::size_t skipped = 0;    // samples over max_length left out (Overlong::kSkip)
  std::size_t dropped = 0;    // samples left with no label to learn from
};

// A conversation encoded as supervised fine-tuning trains it: ids and labels (the ids
// everywhere with `train_on_prompt`), its turns for a cut, and how many ids at its end a cut
// keeps (LLaMA-Factory's efficient eos, appended after its cut). A template's refusal (a role
// or tools it has no place for) names the sample. The preference encoder builds on it.
struct EncodedChatSample {
  TokenizedSample sample;
  std::vector<Turn> turns;
  std::size_t kept_tail = 0;
};
EncodedChatSample encode_chat_sample(const Conversation& conversation, const models::ChatTemplate& chat_template,
                                     const models::Tokenizer& tokenizer, bool train_on_prompt);

// What encoding a sample reads besides the sample, handed on together by the dataset's and the
// preference pairs' encoders.
struct EncodeSettings {
  const models::ChatTemplate& chat_template;
  const models::Tokenizer& tokenizer;
  const EncodeOptions& options;
};

// How many contiguous parts `count` samples are encoded in with `workers` threads (0: one
// part, on the calling thread); run_in_parts runs work(part, begin, end) for each, on its own
// thread when there are several, and rethrows the first part's error.
std::size_t encoding_parts(std::size_t count, int workers);
void run_in_parts(std::size_t count, std::size_t parts,
                  const std::function<void(std::size_t part, std::size_t begin, std::size_t end)>& work);

// Tokenizers and chat templates are immutable once loaded (a byte-level BPE's cache of
// merged pieces is locked, regex match data is per thread), so the workers share them.
EncodedDataset encode_dataset(const Dataset& dataset, const models::ChatTemplate& chat_template,
                              const models::Tokenizer& tokenizer, const EncodeOptions& options);

// The log line of the samples cut from `path` to `max_length`, with what was cut ("3
// sample(s) truncated to --max_length 512: 410 prompt tokens and 95 reply tokens cut, 2 later
// turns dropped ..."); empty when none was.
std::string truncation_summary(const std::string& path, const EncodedDataset& encoded, std::int64_t max_length);

// A plain-text document: the tokenizer's own special tokens (GLM's [gMASK] sop; none for
// Qwen), as run_clm and `zerotune evaluate` encode it, then eos (when the tokenizer has one
// and did not end with it already) so the model learns where a document ends. Labels are the
// ids. Not truncated.
TokenizedSample encode_text(const std::string& text, const models::Tokenizer& tokenizer);

// The id that --padding longest pads with: the tokenizer's pad token, else its eos (as
// LLaMA-Factory sets pad = eos), else 0. It never reaches a real token or the loss.
std::int32_t padding_token(const models::Tokenizer& tokenizer);

}  // namespace zt::train
