// The engine's scheduler over one paged KV cache, open to requests at any time: each step
// decodes one token for every running sequence and, in the same forward, prefills waiting
// prompts into free places (up to max_batch sequences, max_prefill_tokens per forward). A sequence leaves as soon
// as it ends (eos, max_new_tokens) or is cancelled, freeing its blocks for the next.
//
// Engine::run puts a fixed list of requests through it; `zerotune serve` keeps one open and
// adds each HTTP request as it arrives, cancelling those whose client went away.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "infer/engine.h"
#include "infer/paged_kv_cache.h"
#include "infer/token_choice.h"

namespace zt::infer {

class DecodeGraphs;

// What a batch reports, from inside add(), cancel() and step() (which the callbacks must not
// call): each new token as it is chosen, and each request's end with all its new tokens
// (finished, or cut short by cancel()).
struct BatchEvents {
  TokenSink token;
  std::function<void(std::size_t request, std::vector<std::int64_t> generated)> finished;
};

// Throws zt::Error naming `which` when `request` cannot run on `config`'s model: no prompt,
// bad options, or more positions than its context (`first_position`: where a prompt's
// positions start, after a PEFT prefix).
void check_request(const models::ModelConfig& config, const GenerationRequest& request, std::int64_t first_position,
                   const std::string& which);

class ContinuousBatch {
 public:
  // A cache of `cache_blocks` blocks whose block tables fit requests of up to
  // `max_request_tokens` (prompt and new tokens; a PEFT prefix is added here).
  ContinuousBatch(const models::CausalLM& model, const EngineOptions& options, std::int64_t cache_blocks,
                  std::int64_t max_request_tokens, BatchEvents events);
  ~ContinuousBatch();

  // Position of a prompt's first token (after a PEFT prefix that takes positions).
  std::int64_t first_position() const { return first_position_; }

  // Queues `request` under `id` (unique among those unfinished). Throws zt::Error, adding
  // nothing, when it cannot run (check_request, or more tokens than `max_request_tokens`).
  void add(std::size_t id, GenerationRequest request);
  // Ends `id` where it stands and frees its blocks; its tokens so far go to `finished`. An id
  // that is not (or no longer) in the batch is ignored.
  void cancel(std::size_t id);
  void cancel_all();

  bool idle() const { return waiting_.empty() && running_.empty(); }
  std::size_t running() const { return running_.size(); }
  std::size_t waiting() const { return waiting_.size(); }
  // What one step did: the prompt tokens it prefilled and the sequences it gave a token.
  struct StepCounts {
    std::int64_t prompt_tokens = 0;
    std::int64_t sequences = 0;
  };
  // One forward: a token for every running sequence, and the prompts of the waiting ones that
  // fit (their first token).
  StepCounts step();

 private:
  std::vector<SequenceState> admit();
  void decode();
  void take(std::vector<SequenceState> sequences, const Tensor& logits, const Tensor& argmax = Tensor());
  void finish(SequenceState& sequence);
  std::int64_t tokens_needed(const GenerationRequest& request) const;

  const models::CausalLM& model_;
  EngineOptions options_;
  BatchEvents events_;
  std::int64_t first_position_ = 0;
  std::int64_t max_request_tokens_ = 0;
  std::unique_ptr<PagedKvCache> cache_;
  std::map<std::size_t, GenerationRequest> requests_;  // unfinished ones; nodes stay put for SequenceState
  std::deque<std::size_t> waiting_;
  std::vector<SequenceState> running_;
  std::unique_ptr<DecodeGraphs> graphs_;
};

// The prefix length of `model`'s PEFT prefix (0 without one).
std::int64_t prefix_length_of(const models::CausalLM& model);

}  // namespace zt::infer
