// Generation for many prompts at once with continuous batching: up to max_batch sequences
// decode together, one token each per step; a sequence leaves the batch as soon as it ends
// (eos or max_new_tokens) and the next waiting prompt is prefilled into its place, so the
// GPU never waits for the longest answer of a fixed batch. Results come back in input order.
//
// Each request's tokens are exactly what models::generate (one sequence, contiguous cache)
// chooses for it alone: sampling draws from the request's own seeded stream, step by step.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "models/generation/generate_options.h"
#include "models/model.h"

namespace zt::infer {

// What a GPU decode step of 1 to 8 sequences runs: the plain layers replayed as a CUDA graph,
// one persistent kernel for the whole step (infer/persistent_decode.h), or kFastest (the
// default): both timed on the first steps of each batch size, the faster kept, so no flag is
// needed. On an H100 the kernel wins at batch 1 (1.5B 1.37x the graph, 7B 1.03x) and the
// graph at batch 8 (docs/PERF.md, Decode, third pass). Steps of more rows, and models the
// kernel does not take, replay graphs. kFastest also captures each graph with the few-row GEMM
// (cuda/gemm/few_rows) for gate/up + SwiGLU and for every linear, and keeps the fastest graph
// whose logits agree; kGraph keeps cuBLASLt's.
enum class DecodeKernel { kGraph, kFastest, kPersistent };

struct EngineOptions {
  std::int64_t max_batch = 32;             // sequences decoding together
  std::int64_t block_size = 16;            // tokens per KV-cache block
  std::int64_t max_prefill_tokens = 8192;  // prompt tokens prefilled in one forward (one prompt may exceed it)
  // KV-cache blocks; 0 sizes the cache for max_batch of the longest requests, capped by the
  // device memory that is free.
  std::int64_t cache_blocks = 0;
  // On a GPU, decode steps replay CUDA graphs (infer/decode_graph.h) instead of launching
  // every kernel; the tokens are the same either way.
  bool cuda_graphs = true;
  DecodeKernel decode_kernel = DecodeKernel::kFastest;
};

struct GenerationRequest {
  std::vector<std::int64_t> prompt;
  models::GenerationOptions options;
};

// Called with each new token as it is chosen: which request (its index) and the token.
using TokenSink = std::function<void(std::size_t request, std::int64_t token)>;

// How many KV-cache blocks a run of `requests` takes: options.cache_blocks, else enough for
// max_batch of the longest requests; on a GPU no more than `memory_share` of the free device
// memory. `largest` is what the longest request alone needs: fewer blocks than that cannot
// run it. Decided before any work, so a run never fails halfway for want of cache.
struct KvCachePlan {
  std::int64_t blocks = 0;
  std::int64_t largest = 0;
  std::int64_t block_bytes = 0;
};
KvCachePlan plan_kv_cache(const models::CausalLM& model, const EngineOptions& options,
                          const std::vector<GenerationRequest>& requests, double memory_share = 0.9);

// Positions of `model`'s context that a prompt of `prompt_tokens` leaves for its answer
// (counted after a PEFT prefix that takes positions); negative when the prompt alone does not
// fit, and as many as an int64 holds for a model whose config names no context.
std::int64_t answer_room(const models::CausalLM& model, std::int64_t prompt_tokens);

class Engine {
 public:
  explicit Engine(const models::CausalLM& model, EngineOptions options = {});

  // The new tokens of every request, in input order. `cancelled`, checked between steps,
  // ends every unfinished request where it stands (chat's Ctrl-C). Throws zt::Error before
  // any work for a request that cannot run (empty prompt, longer than the model's context).
  std::vector<std::vector<std::int64_t>> run(const std::vector<GenerationRequest>& requests, const TokenSink& sink = {},
                                             const std::function<bool()>& cancelled = {}) const;

 private:
  const models::CausalLM& model_;
  EngineOptions options_;
};

}  // namespace zt::infer
