#include "infer/continuous_batch.h"

#include <algorithm>
#include <mutex>

#include "autograd/grad_mode.h"
#include "infer/batch_forward.h"
#include "infer/decode_graph.h"
#include "runtime/error.h"
#include "runtime/log.h"

namespace zt::infer {

void check_request(const models::ModelConfig& config, const GenerationRequest& r, std::int64_t first_position,
                   const std::string& which) {
  ZT_REQUIRE(!r.prompt.empty(), which + " has no tokens");
  models::check_generation_options(r.options);
  const std::int64_t context = models::context_length(config);
  const auto total = first_position + static_cast<std::int64_t>(r.prompt.size()) + r.options.max_new_tokens;
  ZT_REQUIRE(context == 0 || total <= context,
             which + " has " + std::to_string(r.prompt.size()) + " tokens; with max_new_tokens " +
                 std::to_string(r.options.max_new_tokens) + " it needs " + std::to_string(total) + " positions" +
                 (first_position > 0 ? " (counted after the prefix's " + std::to_string(first_position) + ")" : "") +
                 ", more than the model's context of " + std::to_string(context) + " (" + config.source +
                 "): shorten the prompt or lower max_new_tokens");
}

std::int64_t prefix_length_of(const models::CausalLM& model) {
  if (!model.prefix_source()) return 0;
  autograd::NoGradGuard no_recording;
  return model.prefix_source()(1).front().keys.data().size(1);
}

ContinuousBatch::ContinuousBatch(const models::CausalLM& model, const EngineOptions& options, std::int64_t cache_blocks,
                                 std::int64_t max_request_tokens, BatchEvents events)
    : model_(model), options_(options), events_(std::move(events)), max_request_tokens_(max_request_tokens) {
  autograd::NoGradGuard no_recording;
  cache_ =
      std::make_unique<PagedKvCache>(model.config(), cache_blocks, options.block_size, model.dtype(), model.device());
  if (model.prefix_source()) {
    std::vector<Tensor> keys, values;
    for (const models::PrefixKv& layer : model.prefix_source()(1)) {
      keys.push_back(layer.keys.data().squeeze(0));
      values.push_back(layer.values.data().squeeze(0));
    }
    const std::int64_t prefix_length = keys.front().size(0);
    first_position_ = models::first_position_after(model.prefix_positions(), prefix_length);
    cache_->set_shared_prefix(std::move(keys), std::move(values), first_position_);
  }
  const std::int64_t widest = cache_->blocks_for(cache_->prefix_length() + max_request_tokens);
  cache_->set_table_width(widest);
  if (!options.cuda_graphs || !model.device().is_cuda()) return;
  // A 4-bit base (models/quant/) dequantizes each layer into memory allocated as the step runs,
  // which a replayed graph would read after it was freed: such steps run eagerly.
  if (model.parameter_gatherer() != nullptr) {
    static std::once_flag said;  // once a run, not at every chat turn
    std::call_once(said, [] {
      ZT_LOG(kInfo, "decode steps run without CUDA graphs: the 4-bit base dequantizes each layer as a step runs");
    });
    return;
  }
  graphs_ = std::make_unique<DecodeGraphs>(model, *cache_, options.max_batch, widest, options.decode_kernel);
}

ContinuousBatch::~ContinuousBatch() = default;

std::int64_t ContinuousBatch::tokens_needed(const GenerationRequest& r) const {
  return cache_->prefix_length() + static_cast<std::int64_t>(r.prompt.size()) + r.options.max_new_tokens;
}

void ContinuousBatch::add(std::size_t id, GenerationRequest request) {
  check_request(model_.config(), request, first_position_, "the prompt");
  const auto tokens = static_cast<std::int64_t>(request.prompt.size()) + request.options.max_new_tokens;
  ZT_REQUIRE(tokens <= max_request_tokens_,
             "the prompt has " + std::to_string(request.prompt.size()) + " tokens; with max_new_tokens " +
                 std::to_string(request.options.max_new_tokens) + " it needs " + std::to_string(tokens) +
                 ", more than the " + std::to_string(max_request_tokens_) + " this engine was sized for");
  if (request.options.max_new_tokens == 0) {
    if (events_.finished) events_.finished(id, {});
    return;
  }
  requests_.emplace(id, std::move(request));
  waiting_.push_back(id);
}

void ContinuousBatch::cancel(std::size_t id) {
  const auto waiting = std::find(waiting_.begin(), waiting_.end(), id);
  if (waiting != waiting_.end()) {
    waiting_.erase(waiting);
    requests_.erase(id);
    if (events_.finished) events_.finished(id, {});
    return;
  }
  const auto running =
      std::find_if(running_.begin(), running_.end(), [&](const SequenceState& s) { return s.request == id; });
  if (running == running_.end()) return;
  SequenceState sequence = std::move(*running);
  running_.erase(running);
  finish(sequence);
}

void ContinuousBatch::cancel_all() {
  while (!waiting_.empty()) cancel(waiting_.front());
  while (!running_.empty()) cancel(running_.front().request);
}

// Running sequences decode one token and admitted prompts prefill in the same forward (a
// decode alone replays its CUDA graph).
ContinuousBatch::StepCounts ContinuousBatch::step() {
  autograd::NoGradGuard no_recording;
  std::vector<SequenceState> admitted = admit();
  StepCounts counts{.prompt_tokens = 0, .sequences = static_cast<std::int64_t>(running_.size() + admitted.size())};
  if (admitted.empty()) {
    if (!running_.empty()) decode();
    return counts;
  }
  StepInputs inputs;
  std::vector<SequenceState> sequences;
  sequences.swap(running_);
  for (const SequenceState& s : sequences) {
    inputs.decoding.push_back(static_cast<SequenceId>(s.request));
    inputs.tokens.push_back(s.generated.back());
  }
  for (SequenceState& s : admitted) {
    inputs.prefilling.push_back(static_cast<SequenceId>(s.request));
    inputs.prompts.push_back(&requests_.at(s.request).prompt);
    counts.prompt_tokens += static_cast<std::int64_t>(inputs.prompts.back()->size());
    sequences.push_back(std::move(s));
  }
  take(std::move(sequences), step_logits(model_, *cache_, inputs));
  return counts;
}

std::vector<SequenceState> ContinuousBatch::admit() {
  std::vector<SequenceState> admitted;
  std::int64_t budget = options_.max_prefill_tokens;
  while (!waiting_.empty() && static_cast<std::int64_t>(running_.size() + admitted.size()) < options_.max_batch) {
    const GenerationRequest& r = requests_.at(waiting_.front());
    const auto length = static_cast<std::int64_t>(r.prompt.size());
    if (!admitted.empty() && length > budget) break;
    if (!cache_->try_add(static_cast<SequenceId>(waiting_.front()), tokens_needed(r))) break;
    admitted.push_back({waiting_.front(), &r.options, r.prompt, {}});
    budget -= length;
    waiting_.pop_front();
  }
  ZT_REQUIRE(!admitted.empty() || !running_.empty() || waiting_.empty(),
             "generation: the KV cache cannot hold the next prompt even with nothing else running");
  return admitted;
}

void ContinuousBatch::decode() {
  std::vector<SequenceId> ids;
  std::vector<std::int64_t> tokens;
  for (const SequenceState& s : running_) {
    ids.push_back(static_cast<SequenceId>(s.request));
    tokens.push_back(s.generated.back());
  }
  std::vector<SequenceState> decoding;
  decoding.swap(running_);
  if (graphs_) {
    DecodeGraphs::Step step = graphs_->run(ids, tokens);
    take(std::move(decoding), step.logits, step.argmax);
    return;
  }
  StepInputs inputs;
  inputs.decoding = std::move(ids);
  inputs.tokens = std::move(tokens);
  take(std::move(decoding), step_logits(model_, *cache_, inputs));
}

namespace {

bool finished(const SequenceState& s) {
  const std::vector<std::int64_t>& eos = s.options->eos_token_ids;
  return static_cast<std::int64_t>(s.generated.size()) >= s.options->max_new_tokens ||
         std::find(eos.begin(), eos.end(), s.generated.back()) != eos.end();
}

}  // namespace

// Chooses each sequence's next token; the unfinished ones join those running.
void ContinuousBatch::take(std::vector<SequenceState> sequences, const Tensor& logits, const Tensor& argmax) {
  std::vector<const SequenceState*> rows;
  for (const SequenceState& s : sequences) rows.push_back(&s);
  std::vector<std::int64_t> chosen = choose_next_tokens(logits, rows, argmax);
  for (std::size_t i = 0; i < sequences.size(); ++i) {
    SequenceState& s = sequences[i];
    s.generated.push_back(chosen[i]);
    s.seen.push_back(chosen[i]);
    if (events_.token) events_.token(s.request, chosen[i]);
    if (finished(s))
      finish(s);
    else
      running_.push_back(std::move(s));
  }
}

void ContinuousBatch::finish(SequenceState& s) {
  cache_->remove(static_cast<SequenceId>(s.request));
  std::vector<std::int64_t> generated = std::move(s.generated);
  const std::size_t id = s.request;
  requests_.erase(id);
  if (events_.finished) events_.finished(id, std::move(generated));
}

}  // namespace zt::infer
