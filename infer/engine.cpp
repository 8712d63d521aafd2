#include "infer/engine.h"

#include <algorithm>
#include <deque>

#include "autograd/grad_mode.h"
#include "infer/batch_forward.h"
#include "infer/decode_graph.h"
#include "infer/token_choice.h"
#include "runtime/device.h"
#include "runtime/error.h"

namespace zt::infer {
namespace {

std::int64_t tokens_needed(const GenerationRequest& r, std::int64_t prefix_length) {
  return prefix_length + static_cast<std::int64_t>(r.prompt.size()) + r.options.max_new_tokens;
}

// `first_position`: where the prompts' positions start (after a PEFT prefix, its length).
void check_requests(const models::ModelConfig& config, const std::vector<GenerationRequest>& requests,
                    std::int64_t first_position) {
  const std::int64_t context = models::context_length(config);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const GenerationRequest& r = requests[i];
    const std::string which = "prompt " + std::to_string(i + 1);
    ZT_REQUIRE(!r.prompt.empty(), which + " has no tokens");
    models::check_generation_options(r.options);
    const auto total = first_position + static_cast<std::int64_t>(r.prompt.size()) + r.options.max_new_tokens;
    ZT_REQUIRE(context == 0 || total <= context,
               which + " has " + std::to_string(r.prompt.size()) + " tokens; with max_new_tokens " +
                   std::to_string(r.options.max_new_tokens) + " it needs " + std::to_string(total) + " positions" +
                   (first_position > 0 ? " (counted after the prefix's " + std::to_string(first_position) + ")" : "") +
                   ", more than the model's context of " + std::to_string(context) + " (" + config.source +
                   "): shorten the prompt or lower max_new_tokens");
  }
}

// The scheduler's state over one run: who waits, who decodes, what came out.
class Run {
 public:
  Run(const models::CausalLM& model, const EngineOptions& options, const std::vector<GenerationRequest>& requests,
      PagedKvCache& cache, const TokenSink& sink)
      : model_(model), options_(options), requests_(requests), cache_(cache), sink_(sink), results_(requests.size()) {
    std::int64_t widest = 1;
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (requests[i].options.max_new_tokens > 0) waiting_.push_back(i);
      widest = std::max(widest, cache.blocks_for(tokens_needed(requests[i], cache.prefix_length())));
    }
    cache.set_table_width(widest);
    if (options.cuda_graphs && model.device().is_cuda())
      graphs_ = std::make_unique<DecodeGraphs>(model, cache, options.max_batch, widest);
  }

  bool done() const { return waiting_.empty() && running_.empty(); }
  std::vector<std::vector<std::int64_t>> results() { return std::move(results_); }

  void step() {
    prefill(admit());
    if (!running_.empty()) decode();
  }

  // Cancellation: what each unfinished request has so far becomes its result.
  void stop() {
    for (SequenceState& s : running_) results_[s.request] = std::move(s.generated);
    running_.clear();
    waiting_.clear();
  }

 private:
  std::vector<SequenceState> admit() {
    std::vector<SequenceState> admitted;
    std::int64_t budget = options_.max_prefill_tokens;
    while (!waiting_.empty() && static_cast<std::int64_t>(running_.size() + admitted.size()) < options_.max_batch) {
      const GenerationRequest& r = requests_[waiting_.front()];
      const auto length = static_cast<std::int64_t>(r.prompt.size());
      if (!admitted.empty() && length > budget) break;
      if (!cache_.try_add(static_cast<SequenceId>(waiting_.front()), tokens_needed(r, cache_.prefix_length()))) break;
      admitted.push_back({waiting_.front(), &r.options, r.prompt, {}});
      budget -= length;
      waiting_.pop_front();
    }
    ZT_REQUIRE(!admitted.empty() || !running_.empty() || waiting_.empty(),
               "generation: the KV cache cannot hold the next prompt even with nothing else running");
    return admitted;
  }

  void prefill(std::vector<SequenceState> admitted) {
    if (admitted.empty()) return;
    std::vector<SequenceId> ids;
    std::vector<const std::vector<std::int64_t>*> prompts;
    for (const SequenceState& s : admitted) {
      ids.push_back(static_cast<SequenceId>(s.request));
      prompts.push_back(&requests_[s.request].prompt);
    }
    Tensor logits = prefill_logits(model_, cache_, ids, prompts);
    take(std::move(admitted), logits);
  }

  void decode() {
    std::vector<SequenceId> ids;
    std::vector<std::int64_t> tokens;
    for (const SequenceState& s : running_) {
      ids.push_back(static_cast<SequenceId>(s.request));
      tokens.push_back(s.generated.back());
    }
    if (graphs_) {
      DecodeGraphs::Step step = graphs_->run(ids, tokens);
      take(std::move(running_), step.logits, step.argmax);
      return;
    }
    take(std::move(running_), decode_logits(model_, cache_, ids, tokens));
  }

  // Chooses each sequence's next token; the unfinished ones go on running.
  void take(std::vector<SequenceState> sequences, const Tensor& logits, const Tensor& argmax = Tensor()) {
    std::vector<const SequenceState*> rows;
    for (const SequenceState& s : sequences) rows.push_back(&s);
    std::vector<std::int64_t> chosen = choose_next_tokens(logits, rows, argmax);
    for (std::size_t i = 0; i < sequences.size(); ++i) {
      SequenceState& s = sequences[i];
      s.generated.push_back(chosen[i]);
      s.seen.push_back(chosen[i]);
      if (sink_) sink_(s.request, chosen[i]);
      if (finished(s)) {
        cache_.remove(static_cast<SequenceId>(s.request));
        results_[s.request] = std::move(s.generated);
      } else {
        running_.push_back(std::move(s));
      }
    }
  }

  static bool finished(const SequenceState& s) {
    const std::vector<std::int64_t>& eos = s.options->eos_token_ids;
    return static_cast<std::int64_t>(s.generated.size()) >= s.options->max_new_tokens ||
           std::find(eos.begin(), eos.end(), s.generated.back()) != eos.end();
  }

  const models::CausalLM& model_;
  const EngineOptions& options_;
  const std::vector<GenerationRequest>& requests_;
  PagedKvCache& cache_;
  const TokenSink& sink_;
  std::deque<std::size_t> waiting_;
  std::vector<SequenceState> running_;
  std::vector<std::vector<std::int64_t>> results_;
  std::unique_ptr<DecodeGraphs> graphs_;
};

std::int64_t prefix_length_of(const models::CausalLM& model) {
  if (!model.prefix_source()) return 0;
  autograd::NoGradGuard no_recording;
  return model.prefix_source()(1).front().keys.data().size(1);
}

}  // namespace

KvCachePlan plan_kv_cache(const models::CausalLM& model, const EngineOptions& options,
                          const std::vector<GenerationRequest>& requests, double memory_share) {
  const models::ModelConfig& c = model.config();
  const std::int64_t prefix_length = prefix_length_of(model);
  std::vector<std::int64_t> needs;
  for (const GenerationRequest& r : requests)
    needs.push_back((tokens_needed(r, prefix_length) + options.block_size - 1) / options.block_size);
  std::sort(needs.rbegin(), needs.rend());
  KvCachePlan plan;
  plan.largest = needs.empty() ? 1 : std::max<std::int64_t>(needs.front(), 1);
  plan.blocks = options.cache_blocks;
  if (plan.blocks == 0)
    for (std::size_t i = 0; i < needs.size() && static_cast<std::int64_t>(i) < options.max_batch; ++i)
      plan.blocks += needs[i];
  plan.blocks = std::max(plan.blocks, plan.largest);
  plan.block_bytes = 2 * c.num_layers * options.block_size * c.num_kv_heads * c.head_dim *
                     static_cast<std::int64_t>(dtype_size(model.dtype()));
  if (model.device().is_cuda()) {
    const auto free_bytes = static_cast<double>(device_memory_info(model.device().index).free);
    plan.blocks = std::min(plan.blocks, static_cast<std::int64_t>(free_bytes * memory_share) / plan.block_bytes);
  }
  return plan;
}

Engine::Engine(const models::CausalLM& model, EngineOptions options) : model_(model), options_(options) {
  ZT_REQUIRE(options_.max_batch > 0 && options_.block_size > 0 && options_.max_prefill_tokens > 0,
             "generation: max_batch, block_size and max_prefill_tokens must be positive");
}

std::vector<std::vector<std::int64_t>> Engine::run(const std::vector<GenerationRequest>& requests,
                                                   const TokenSink& sink,
                                                   const std::function<bool()>& cancelled) const {
  autograd::NoGradGuard no_recording;
  std::vector<models::PrefixKv> prefix;
  if (model_.prefix_source()) prefix = model_.prefix_source()(1);
  const std::int64_t prefix_length = prefix.empty() ? 0 : prefix.front().keys.data().size(1);
  const std::int64_t first_position = models::first_position_after(model_.prefix_positions(), prefix_length);
  check_requests(model_.config(), requests, first_position);
  const KvCachePlan plan = plan_kv_cache(model_, options_, requests);
  ZT_REQUIRE(plan.blocks >= plan.largest,
             "the longest request needs " + std::to_string(plan.largest * options_.block_size) +
                 " tokens of KV cache (" + std::to_string(plan.largest * plan.block_bytes >> 20) +
                 " MiB); the free device memory holds " + std::to_string(plan.blocks * options_.block_size) +
                 " tokens: shorten prompts or max_new_tokens");
  PagedKvCache cache(model_.config(), plan.blocks, options_.block_size, model_.dtype(), model_.device());
  if (!prefix.empty()) {
    std::vector<Tensor> keys, values;
    for (const models::PrefixKv& layer : prefix) {
      keys.push_back(layer.keys.data().squeeze(0));
      values.push_back(layer.values.data().squeeze(0));
    }
    cache.set_shared_prefix(std::move(keys), std::move(values), first_position);
  }
  Run run(model_, options_, requests, cache, sink);
  while (!run.done()) {
    if (cancelled && cancelled()) {
      run.stop();
      break;
    }
    run.step();
  }
  return run.results();
}

}  // namespace zt::infer
