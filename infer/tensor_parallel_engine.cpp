#include "infer/tensor_parallel_engine.h"

#include <algorithm>

#include "autograd/grad_mode.h"
#include "distributed/integer_collectives.h"
#include "runtime/device.h"
#include "runtime/error.h"

namespace zt::infer {
namespace {

using distributed::max_over_ranks;
using distributed::min_over_ranks;
using distributed::ReduceOp;

// A fingerprint of every request's tokens, small enough to pass exactly through any
// communicator (the in-process one sums in double).
std::int64_t fingerprint(const std::vector<std::vector<std::int64_t>>& results) {
  constexpr std::int64_t kModulus = 2147483647;  // 2^31 - 1
  std::int64_t hash = 17;
  auto mix = [&](std::int64_t value) { hash = (hash * 31 + (value % kModulus + kModulus)) % kModulus; };
  for (const auto& tokens : results) {
    mix(static_cast<std::int64_t>(tokens.size()));
    for (std::int64_t token : tokens) mix(token);
  }
  return hash;
}

}  // namespace

PartialSumsOverRanks::PartialSumsOverRanks(models::CausalLM& shard, distributed::Communicator& comm) : shard_(shard) {
  shard_.set_partial_sum_reducer([&comm](const Tensor& partial) { comm.all_reduce(partial, ReduceOp::kSum); });
}

PartialSumsOverRanks::~PartialSumsOverRanks() { shard_.set_partial_sum_reducer({}); }

TensorParallelEngine::TensorParallelEngine(models::CausalLM& shard, distributed::Communicator& comm,
                                           TensorParallelOptions options)
    : shard_(shard), comm_(comm), options_(options), partial_sums_(shard, comm) {
  ZT_REQUIRE(options_.ranks_per_device >= 1, "tensor parallelism: ranks_per_device must be at least 1");
}

std::vector<std::vector<std::int64_t>> TensorParallelEngine::run(const std::vector<GenerationRequest>& requests,
                                                                 const TokenSink& sink,
                                                                 const std::function<bool()>& cancelled) {
  EngineOptions options = options_.engine;
  options.cache_blocks = agreed_cache_blocks(requests);
  // The all-reduces inside each step wait on the host (the in-process meeting, NCCL's
  // watchdog), which a CUDA graph cannot capture.
  options.cuda_graphs = false;
  const bool rank0 = comm_.rank() == 0;
  const TokenSink rank0_sink = rank0 ? sink : TokenSink{};
  std::vector<std::vector<std::int64_t>> results =
      Engine(shard_, options).run(requests, rank0_sink, [&] { return cancelled_on_rank0(cancelled); });
  check_ranks_agree(results);
  return results;
}

// Engine's own rule (blocks for max_batch of the longest requests, or options.cache_blocks),
// within this rank's part of the free device memory, and then the smallest over the ranks:
// ranks with caches of different sizes could admit different sequences into a step and stop
// meeting in the same collectives.
std::int64_t TensorParallelEngine::agreed_cache_blocks(const std::vector<GenerationRequest>& requests) {
  // Below the Engine's own 90% cap, so that its later look at free memory keeps this count.
  const double share = 0.85 / static_cast<double>(options_.ranks_per_device);
  const KvCachePlan plan = plan_kv_cache(shard_, options_.engine, requests, share);
  const std::int64_t blocks = min_over_ranks(comm_, plan.blocks, shard_.device());
  const std::int64_t block_size = options_.engine.block_size;
  ZT_REQUIRE(blocks >= plan.largest,
             "tensor parallelism: the longest request needs " + std::to_string(plan.largest * block_size) +
                 " tokens of KV cache per rank; "
                 "the free memory of some rank holds " +
                 std::to_string(blocks * block_size) + ": shorten prompts or max_new_tokens, or use more ranks");
  return blocks;
}

bool TensorParallelEngine::cancelled_on_rank0(const std::function<bool()>& cancelled) {
  const bool stop = comm_.rank() == 0 && cancelled && cancelled();
  return distributed::broadcast_integer(comm_, stop ? 1 : 0, 0, shard_.device()) != 0;
}

void TensorParallelEngine::check_ranks_agree(const std::vector<std::vector<std::int64_t>>& results) {
  const std::int64_t mine = fingerprint(results);
  const std::int64_t largest = max_over_ranks(comm_, mine, shard_.device());
  const std::int64_t smallest = min_over_ranks(comm_, mine, shard_.device());
  ZT_REQUIRE(largest == smallest, "tensor parallelism: the ranks generated different tokens (rank " +
                                      std::to_string(comm_.rank()) +
                                      "'s differ from another's); every rank must see "
                                      "the same all-reduced activations — please report this as a bug");
}

}  // namespace zt::infer
