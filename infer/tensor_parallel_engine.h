// Generation on N tensor-parallel ranks (models/tensor_parallel.h): every rank runs the Engine
// on its shard, and the shard's all-reduces after attention and after the MLP give every rank
// the same hidden states, so every rank computes the same logits and chooses the same tokens
// (greedy or from a request's seeded stream). What could still differ between ranks is agreed
// over the communicator: the KV-cache size (free memory differs from GPU to GPU), and
// cancellation (rank 0 decides). After each run the ranks check that they agree.
#pragma once

#include <functional>

#include "distributed/communicator.h"
#include "infer/engine.h"

namespace zt::infer {

// While it lives, `shard`'s partial outputs (after attention and after the MLP) are summed
// over `comm` in place: what makes a shard compute the whole model's activations.
class PartialSumsOverRanks {
 public:
  PartialSumsOverRanks(models::CausalLM& shard, distributed::Communicator& comm);
  ~PartialSumsOverRanks();
  PartialSumsOverRanks(const PartialSumsOverRanks&) = delete;
  PartialSumsOverRanks& operator=(const PartialSumsOverRanks&) = delete;

 private:
  models::CausalLM& shard_;
};

struct TensorParallelOptions {
  EngineOptions engine;
  // Ranks whose shards share one GPU (in-process ranks); each sizes its cache to its part
  // of the free memory.
  int ranks_per_device = 1;
};

class TensorParallelEngine {
 public:
  // Makes `shard` sum its partial outputs over `comm` (an all-reduce in place) for as long
  // as the engine lives. Both must outlive the engine.
  TensorParallelEngine(models::CausalLM& shard, distributed::Communicator& comm, TensorParallelOptions options = {});
  TensorParallelEngine(const TensorParallelEngine&) = delete;
  TensorParallelEngine& operator=(const TensorParallelEngine&) = delete;

  // Engine::run, collectively: every rank calls it with the same requests and gets the same
  // results. `sink` is called on rank 0 only; `cancelled` is asked on rank 0 only, between
  // steps, and its answer reaches every rank. Throws zt::Error if the ranks' tokens differ.
  std::vector<std::vector<std::int64_t>> run(const std::vector<GenerationRequest>& requests, const TokenSink& sink = {},
                                             const std::function<bool()>& cancelled = {});

 private:
  std::int64_t agreed_cache_blocks(const std::vector<GenerationRequest>& requests);
  bool cancelled_on_rank0(const std::function<bool()>& cancelled);
  void check_ranks_agree(const std::vector<std::vector<std::int64_t>>& results);

  models::CausalLM& shard_;
  distributed::Communicator& comm_;
  TensorParallelOptions options_;
  PartialSumsOverRanks partial_sums_;
};

}  // namespace zt::infer
