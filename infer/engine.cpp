#include "infer/engine.h"

#include <algorithm>
#include <limits>

#include "infer/continuous_batch.h"
#include "runtime/device.h"
#include "runtime/error.h"

namespace zt::infer {
namespace {

std::int64_t tokens_needed(const GenerationRequest& r, std::int64_t prefix_length) {
  return prefix_length + static_cast<std::int64_t>(r.prompt.size()) + r.options.max_new_tokens;
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

std::int64_t answer_room(const models::CausalLM& model, std::int64_t prompt_tokens) {
  const std::int64_t context = models::context_length(model.config());
  if (context == 0) return std::numeric_limits<std::int64_t>::max();
  const std::int64_t first_position = models::first_position_after(model.prefix_positions(), prefix_length_of(model));
  return context - first_position - prompt_tokens;
}

Engine::Engine(const models::CausalLM& model, EngineOptions options) : model_(model), options_(options) {
  ZT_REQUIRE(options_.max_batch > 0 && options_.block_size > 0 && options_.max_prefill_tokens > 0,
             "generation: max_batch, block_size and max_prefill_tokens must be positive");
}

std::vector<std::vector<std::int64_t>> Engine::run(const std::vector<GenerationRequest>& requests,
                                                   const TokenSink& sink,
                                                   const std::function<bool()>& cancelled) const {
  const std::int64_t prefix_length = prefix_length_of(model_);
  const std::int64_t first_position = models::first_position_after(model_.prefix_positions(), prefix_length);
  for (std::size_t i = 0; i < requests.size(); ++i)
    check_request(model_.config(), requests[i], first_position, "prompt " + std::to_string(i + 1));
  const KvCachePlan plan = plan_kv_cache(model_, options_, requests);
  ZT_REQUIRE(plan.blocks >= plan.largest,
             "the longest request needs " + std::to_string(plan.largest * options_.block_size) +
                 " tokens of KV cache (" + std::to_string(plan.largest * plan.block_bytes >> 20) +
                 " MiB); the free device memory holds " + std::to_string(plan.blocks * options_.block_size) +
                 " tokens: shorten prompts or max_new_tokens");
  std::int64_t longest = 1;
  for (const GenerationRequest& r : requests) longest = std::max(longest, tokens_needed(r, 0));
  std::vector<std::vector<std::int64_t>> results(requests.size());
  BatchEvents events{.token = sink, .finished = [&](std::size_t request, std::vector<std::int64_t> generated) {
                       results[request] = std::move(generated);
                     }};
  ContinuousBatch batch(model_, options_, plan.blocks, longest, std::move(events));
  for (std::size_t i = 0; i < requests.size(); ++i) batch.add(i, requests[i]);
  while (!batch.idle()) {
    if (cancelled && cancelled()) {
      batch.cancel_all();
      break;
    }
    batch.step();
  }
  return results;
}

}  // namespace zt::infer
