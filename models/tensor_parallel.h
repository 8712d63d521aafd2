// Tensor parallelism for inference, Megatron's scheme: each of N ranks holds 1/N of every
// layer's attention heads and MLP columns and computes that share of the layer.
//   column-parallel (split by output rows): q, k, v (or ChatGLM's fused query_key_value
//     [q; k; v]) with their biases, gate and up (or the fused [gate; up]) with their biases;
//   row-parallel (split by input columns): the attention output projection and the MLP down
//     projection, whose outputs are then partial sums that one all-reduce per projection
//     completes (CausalLM::set_partial_sum_reducer) before any norm or residual reads them;
//   replicated: embedding, norms (Qwen3's per-head q/k norms too), final norm, LM head.
// A row-parallel projection's bias is held by rank 0 only (zeros elsewhere), so the sum counts
// it once. Grouped-query attention: with kv heads divisible by N each rank takes its own kv
// heads; with N divisible by the kv heads each rank holds the one kv head its query heads read
// (a copy of it sits on every rank that shares it).
#pragma once

#include <string>
#include <vector>

#include "models/model.h"

namespace zt::models {

struct ShardPlace {
  int rank = 0;
  int size = 1;  // N, the number of ranks
};

// The N (1 .. num_heads) that split `config`: heads, intermediate size and kv heads.
std::vector<int> tensor_parallel_sizes(const ModelConfig& config);

// Throws zt::Error when `config` cannot be split `size` ways, naming the sizes that do not
// divide and the values that would work.
void check_tensor_parallel_size(const ModelConfig& config, int size);

// Every rank's config: num_heads / N, the kv heads one rank reads, intermediate_size / N.
ModelConfig shard_config(const ModelConfig& config, int size);

// Rank place.rank's shard of `full` (on any device) on `device`, in full's dtype and options.
// A LoRA must be merged first (models::merge_lora); a P-Tuning prefix is computed once (no
// dropout: inference) and each rank keeps its kv heads' slice of it. The shard shares no
// memory with `full`, which may be freed once every shard is built.
CausalLM shard_model(const CausalLM& full, ShardPlace place, Device device);

}  // namespace zt::models
