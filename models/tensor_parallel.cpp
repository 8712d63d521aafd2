#include "models/tensor_parallel.h"

#include <algorithm>

#include "autograd/grad_mode.h"
#include "models/weights/hf_names.h"
#include "runtime/error.h"
#include "runtime/terminal/text_list.h"

namespace zt::models {
namespace {

// Where one rank's share lies in the full model's tensors, in elements along the split dim.
struct ShardRanges {
  std::int64_t q_start, q_size;      // its query heads, times head_dim
  std::int64_t kv_start, kv_size;    // the kv heads those query heads read, times head_dim
  std::int64_t ffn_start, ffn_size;  // its intermediate columns
  bool holds_row_parallel_bias;      // rank 0 adds the biases of o_proj and down_proj
};

std::int64_t kv_heads_per_rank(const ModelConfig& c, int size) {
  return std::max<std::int64_t>(c.num_kv_heads / size, 1);
}

ShardRanges ranges_of(const ModelConfig& c, ShardPlace place) {
  const std::int64_t heads = c.num_heads / place.size;
  const std::int64_t first_head = place.rank * heads;
  const std::int64_t group = c.num_heads / c.num_kv_heads;  // query heads that read one kv head
  const std::int64_t ffn = c.intermediate_size / place.size;
  return {first_head * c.head_dim,
          heads * c.head_dim,
          first_head / group * c.head_dim,
          kv_heads_per_rank(c, place.size) * c.head_dim,
          place.rank * ffn,
          ffn,
          place.rank == 0};
}

Tensor rows(const Tensor& t, std::int64_t start, std::int64_t length) { return t.narrow(0, start, length); }

Tensor columns(const Tensor& t, std::int64_t start, std::int64_t length) { return t.narrow(1, start, length); }

// Pieces of a fused projection, stacked along dim 0 into one new tensor.
Tensor stacked_rows(const std::vector<Tensor>& parts) {
  Shape shape = parts.front().shape();
  shape[0] = 0;
  for (const Tensor& part : parts) shape[0] += part.size(0);
  Tensor out = Tensor::empty(shape, parts.front().dtype(), parts.front().device());
  std::int64_t at = 0;
  for (const Tensor& part : parts) {
    Tensor target = out.narrow(0, at, part.size(0));
    target.copy_from(part);
    at += part.size(0);
  }
  return out;
}

// ChatGLM's query_key_value [q; k; v] (weight or bias): this rank's q, k and v rows, fused alike.
Tensor fused_qkv_share(const Tensor& t, const ModelConfig& c, const ShardRanges& r) {
  return stacked_rows({rows(t, r.q_start, r.q_size), rows(t, c.q_size() + r.kv_start, r.kv_size),
                       rows(t, c.q_size() + c.kv_size() + r.kv_start, r.kv_size)});
}

// GLM's gate_up_proj / dense_h_to_4h [gate; up]: this rank's gate rows, then the matching up
// rows, so the fused SwiGLU still finds gate in the first half and up in the second.
Tensor fused_gate_up_share(const Tensor& t, const ModelConfig& c, const ShardRanges& r) {
  return stacked_rows({rows(t, r.ffn_start, r.ffn_size), rows(t, c.intermediate_size + r.ffn_start, r.ffn_size)});
}

// The ranks' outputs of a row-parallel projection are summed: its bias must be in one term only.
Tensor row_parallel_bias_share(const Tensor& t, const ShardRanges& r) {
  return r.holds_row_parallel_bias ? t : Tensor::zeros(t.shape(), t.dtype(), t.device());
}

Tensor share_of_slot(int slot, const Tensor& full, const ModelConfig& c, const ShardRanges& r) {
  switch (slot) {
    case kQ:
    case kQBias:
      return rows(full, r.q_start, r.q_size);
    case kK:
    case kKBias:
    case kV:
    case kVBias:
      return rows(full, r.kv_start, r.kv_size);
    case kQkv:
    case kQkvBias:
      return fused_qkv_share(full, c, r);
    case kGate:
    case kUp:
      return rows(full, r.ffn_start, r.ffn_size);
    case kGateUp:
    case kGateUpBias:
      return fused_gate_up_share(full, c, r);
    case kO:
      return columns(full, r.q_start, r.q_size);
    case kDown:
      return columns(full, r.ffn_start, r.ffn_size);
    case kOBias:
    case kDownBias:
      return row_parallel_bias_share(full, r);
    default:
      return full;  // norms, Qwen3's per-head q/k norms included: every rank needs them whole
  }
}

// The full model's prefix, computed once, cut to this rank's kv heads; the shard's source
// repeats it for every sequence, as the encoder's does.
CausalLM::PrefixSource prefix_share(const CausalLM& full, const ShardRanges& r, Device device) {
  autograd::NoGradGuard no_dropout;
  const std::int64_t head_dim = full.config().head_dim;
  std::vector<std::pair<Tensor, Tensor>> kept;
  for (const PrefixKv& layer : full.prefix_source()(1)) {
    auto cut = [&](const Variable& v) {
      return v.data().narrow(2, r.kv_start / head_dim, r.kv_size / head_dim).contiguous().to(device);
    };
    kept.emplace_back(cut(layer.keys), cut(layer.values));
  }
  return [kept](std::int64_t sequences) {
    std::vector<PrefixKv> prefix;
    for (const auto& [keys, values] : kept) {
      Shape shape = keys.shape();
      shape[0] = sequences;
      prefix.push_back({Variable(keys.expand(shape).contiguous()), Variable(values.expand(shape).contiguous())});
    }
    return prefix;
  };
}

std::vector<std::string> split_problems(const ModelConfig& c, int size) {
  const std::string n = std::to_string(size);
  std::vector<std::string> problems;
  if (c.num_heads % size != 0)
    problems.push_back(std::to_string(c.num_heads) + " attention heads do not divide by " + n);
  if (c.intermediate_size % size != 0)
    problems.push_back("intermediate_size " + std::to_string(c.intermediate_size) + " does not divide by " + n);
  if (c.num_kv_heads % size != 0 && size % c.num_kv_heads != 0)
    problems.push_back(std::to_string(c.num_kv_heads) + " kv heads and " + n +
                       " ranks do not divide one another (each rank needs whole kv heads, or one kv head shared)");
  return problems;
}

}  // namespace

std::vector<int> tensor_parallel_sizes(const ModelConfig& config) {
  std::vector<int> sizes;
  for (int size = 1; size <= config.num_heads; ++size)
    if (split_problems(config, size).empty()) sizes.push_back(size);
  return sizes;
}

void check_tensor_parallel_size(const ModelConfig& config, int size) {
  ZT_REQUIRE(size >= 1, "tensor parallelism needs at least 1 rank, got " + std::to_string(size));
  const std::vector<std::string> problems = split_problems(config, size);
  if (problems.empty()) return;
  std::vector<std::string> working;
  for (int n : tensor_parallel_sizes(config)) working.push_back(std::to_string(n));
  fail("tensor parallelism over " + std::to_string(size) + " ranks (--tp " + std::to_string(size) +
       ") cannot split the " + architecture_name(config.arch) + " model of " + config.source + ": " +
       join_list(problems) + "; the sizes that split this model are " + join_list(working));
}

ModelConfig shard_config(const ModelConfig& config, int size) {
  check_tensor_parallel_size(config, size);
  ModelConfig shard = config;
  shard.num_heads = config.num_heads / size;
  shard.num_kv_heads = kv_heads_per_rank(config, size);
  shard.intermediate_size = config.intermediate_size / size;
  return shard;
}

CausalLM shard_model(const CausalLM& full, ShardPlace place, Device device) {
  const ModelConfig& config = full.config();
  ZT_REQUIRE(place.rank >= 0 && place.rank < place.size,
             "shard_model: rank " + std::to_string(place.rank) + " is not one of " + std::to_string(place.size));
  ZT_REQUIRE(full.lora().empty(),
             "shard_model: the model carries a LoRA; merge it first (models::merge_lora), "
             "tensor parallelism splits the merged weights");
  ModelOptions options = full.options();
  options.device = device;
  CausalLM shard(shard_config(config, place.size), options);
  const ShardRanges ranges = ranges_of(config, place);
  autograd::NoGradGuard no_recording;
  auto fill = [&](const std::string& name, const Tensor& value) {
    Tensor target = shard.parameter(name).data();
    target.copy_from(value);
  };
  auto replicate = [&](const std::string& name) { fill(name, full.parameter(name).data()); };
  const ParameterLayout layout = parameter_layout(config);
  replicate(layout.embedding.name);
  for (const LayerSpecs& layer : layout.layers)
    for (int slot = 0; slot < kLayerSlotCount; ++slot)
      if (layer[slot])
        fill(layer[slot]->name, share_of_slot(slot, full.parameter(layer[slot]->name).data(), config, ranges));
  if (layout.final_norm) replicate(layout.final_norm->name);
  if (layout.lm_head) replicate(layout.lm_head->name);
  if (full.prefix_source()) shard.set_prefix_source(prefix_share(full, ranges, device), full.prefix_positions());
  shard.set_source_dir(full.source_dir());
  return shard;
}

}  // namespace zt::models
