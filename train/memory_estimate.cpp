#include "train/memory_estimate.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "models/peft/lora.h"
#include "models/quant/quantized_linears.h"
#include "models/weights/hf_names.h"
#include "ops/quant4/blockwise.h"
#include "runtime/error.h"
#include "train/optim/optimizer_offload.h"
#include "train/zero/zero_config.h"
#include "train/zero/zero_layout.h"

namespace zt::train {
namespace {

constexpr std::int64_t kGiB = std::int64_t{1} << 30;
constexpr std::int64_t kFp32 = 4;
constexpr std::int64_t kRuntimeReserve = kGiB;  // CUDA context, cuBLAS workspaces, fragmentation

std::int64_t sum(const std::vector<std::int64_t>& values) {
  return std::accumulate(values.begin(), values.end(), std::int64_t{0});
}

std::vector<std::int64_t> model_numels(const models::ModelConfig& config) {
  std::vector<std::int64_t> numels;
  for (const models::ParamSpec& spec : models::parameter_layout(config).all())
    numels.push_back(shape_numel(spec.shape));
  return numels;
}

// The largest set of weights stage 3 gathers at once: a decoder layer, the embedding or the
// LM head.
std::int64_t largest_gathered_unit(const models::ModelConfig& config) {
  const models::ParameterLayout layout = models::parameter_layout(config);
  std::int64_t largest = shape_numel(layout.embedding.shape);
  if (layout.lm_head) largest = std::max(largest, shape_numel(layout.lm_head->shape));
  for (const models::LayerSpecs& layer : layout.layers) {
    std::int64_t numel = 0;
    for (const auto& spec : layer)
      if (spec) numel += shape_numel(spec->shape);
    largest = std::max(largest, numel);
  }
  return largest;
}

// Bytes of gradient staging under stages 0-2 (train/zero/gradient_buckets.h): the two largest
// buckets, and the largest chunk when buckets are reduce-scattered (stages 1 and 2).
std::int64_t bucket_staging_bytes(const ZeroLayout& layout, std::int64_t width, bool reduce_scattered) {
  std::int64_t largest = 0, second = 0, chunk = 0;
  for (const ZeroBucket& bucket : layout.buckets) {
    second = std::max(second, std::min(largest, bucket.padded_numel));
    largest = std::max(largest, bucket.padded_numel);
    chunk = std::max(chunk, bucket.chunk());
  }
  return width * (largest + second + (reduce_scattered ? chunk : 0));
}

// Stage 3 keeps a shard of every parameter above the persistence threshold and the rest whole.
// A rank's share of stage-3 working weights: its shard of the partitioned parameters, and the
// parameters of at most the persistence threshold that stay whole.
std::int64_t stage3_shard_numel(const std::vector<std::int64_t>& numels, const MemorySettings& s) {
  std::int64_t shard = 0;
  for (std::int64_t n : numels) shard += n > s.persistence_threshold ? (n + s.world_size() - 1) / s.world_size() : 0;
  return shard;
}

std::int64_t stage3_whole_numel(const std::vector<std::int64_t>& numels, const MemorySettings& s) {
  std::int64_t whole = 0;
  for (std::int64_t n : numels) whole += n > s.persistence_threshold ? 0 : n;
  return whole;
}

// Saved per token by one decoder layer's forward (models/decoder.cpp): the layer input, the
// norm outputs and the residual sum that linear and rmsnorm keep, rotated q and k and v and
// the attention output, gate and up and their SwiGLU product; fp32 norm statistics and the
// attention's log-sum-exp per head.
std::int64_t layer_bytes_per_token(const models::ModelConfig& c, std::int64_t width) {
  std::int64_t elements = 4 * c.hidden_size + 2 * c.q_size() + 2 * c.kv_size() + 3 * c.intermediate_size;
  std::int64_t fp32 = 2 + c.num_heads;
  if (c.fused_qkv) elements += c.q_size() + c.kv_size();  // v is a view: the whole qkv output stays
  if (c.qk_norm) elements += c.q_size() + c.kv_size(), fp32 += c.num_heads + c.num_kv_heads;
  if (c.sandwich_norms) elements += 2 * c.hidden_size, fp32 += 2;
  return elements * width + fp32 * kFp32;
}

// Whether the ZeRO-3 engine runs: stage 3 over several ranks, or one process under stage 3 with
// parameter offload, which runs it over one rank (docs/ZERO.md, One rank); any other single
// rank runs the single-device optimizer.
bool runs_zero3_engine(const MemorySettings& s) { return s.stage == 3 && (s.world_size() > 1 || s.offload_param); }

// QLoRA's base: the linears' elements, their 4-bit bytes, and the largest layer's elements
// (dequantized while it computes).
struct QuantizedLinears {
  std::int64_t numel = 0, bytes = 0, largest_layer = 0;
};

QuantizedLinears quantized_linears(const models::ModelConfig& config, bool double_quant) {
  QuantizedLinears q;
  for (const std::vector<models::ParamSpec>& layer : models::quant::quantizable_linear_specs(config)) {
    std::int64_t layer_numel = 0;
    for (const models::ParamSpec& spec : layer) {
      const std::int64_t n = shape_numel(spec.shape);
      layer_numel += n;
      q.bytes += ops::quant4::quantized_bytes(n, ops::quant4::kDefaultBlocksize, double_quant);
    }
    q.numel += layer_numel;
    q.largest_layer = std::max(q.largest_layer, layer_numel);
  }
  return q;
}

// The layer working set that backward recomputes: one layer's activations and their gradients.
std::int64_t recomputed_layer_bytes(const models::ModelConfig& c, const MemorySettings& s) {
  const std::int64_t width = static_cast<std::int64_t>(dtype_size(s.dtype));
  return 2 * s.micro_batch * s.max_length * layer_bytes_per_token(c, width);
}

std::int64_t activation_bytes(const models::ModelConfig& c, const MemorySettings& s) {
  const std::int64_t tokens = s.micro_batch * s.max_length;
  const std::int64_t width = static_cast<std::int64_t>(dtype_size(s.dtype));
  const std::int64_t layer = tokens * layer_bytes_per_token(c, width);
  const std::int64_t top = tokens * (2 * c.hidden_size * width + kFp32);  // the final norm's input and output
  if (!recomputes_layers(s)) return c.num_layers * layer + top + layer;
  // Each layer's input, then during backward one layer recomputed and its gradients.
  return c.num_layers * tokens * c.hidden_size * width + top + recomputed_layer_bytes(c, s);
}

// One chunk of logits in the run's dtype (the fused loss's default budget: 1 GiB when the head
// trains, 256 MiB when it is frozen), the hidden gradient
// computed in the forward, and an fp32 LM-head gradient when the head (or the embedding tied
// to it) trains. Under recomputation the chunk is freed before backward recomputes the first
// layer, so it counts only where it exceeds that layer's working set (in activation_bytes):
// on an H100 (QLoRA, Qwen2.5-7B/14B/32B, B1 x S2048) adding both overstated the peak by 1.1 GiB.
std::int64_t loss_bytes(const models::ModelConfig& c, const MemorySettings& s) {
  const std::int64_t tokens = s.micro_batch * s.max_length;
  const std::int64_t width = static_cast<std::int64_t>(dtype_size(s.dtype));
  const std::int64_t chunk_budget = s.full_finetuning() ? kGiB : kGiB / 4;
  std::int64_t chunk = std::min(tokens * c.vocab_size * width, chunk_budget);
  if (recomputes_layers(s)) chunk = std::max<std::int64_t>(0, chunk - recomputed_layer_bytes(c, s));
  const std::int64_t head_gradient = s.full_finetuning() ? c.vocab_size * c.hidden_size * kFp32 : 0;
  return chunk + tokens * c.hidden_size * width + head_gradient;
}

// Master weights and moments of `owned` elements: on the device, or (offload) in the host
// block, which also holds a copy of the owned gradient and the updated working weights.
void place_optimizer_state(HeldModelStates& held, const OptimizerOffload* offload, std::int64_t owned) {
  const std::int64_t on_host = offload == nullptr ? 0 : offload->numel();  // a partial offload keeps the rest
  held.gpu.optimizer_state = 3 * kFp32 * (owned - on_host);
  if (offload == nullptr) return;
  held.host.optimizer_state = 3 * kFp32 * on_host;
  held.host.gradients = kFp32 * on_host;
  held.host.parameters = offload->host_bytes() - held.host.optimizer_state - held.host.gradients;
}

}  // namespace

DType gradient_partition_dtype(const MemorySettings& s) {
  return gradient_partition_dtype(s.stage, s.world_size(), s.offload, s.grad_accum_dtype, s.dtype);
}

namespace {

void check_settings(const MemorySettings& s) {
  ZT_REQUIRE(s.gpus_per_node >= 1 && s.nodes >= 1, "memory estimate: GPUs per node and nodes must be >= 1");
  ZT_REQUIRE(s.micro_batch >= 1 && s.max_length >= 1, "memory estimate: micro batch and max length must be >= 1");
  ZT_REQUIRE(!s.quantized_base || (!s.full_finetuning() && !runs_zero3_engine(s)),
             "memory estimate: a 4-bit base trains LoRA, under ZeRO stages 0-2");
}

}  // namespace

MemoryEstimate estimate_model_states(const models::ModelConfig& config, const MemorySettings& s) {
  check_settings(s);
  const std::vector<std::int64_t> all = model_numels(config);
  const std::vector<std::int64_t>& trainable = s.full_finetuning() ? all : s.trainable_numels;
  const std::int64_t psi = sum(all), psi_trainable = sum(trainable);
  const std::int64_t width = static_cast<std::int64_t>(dtype_size(s.dtype));
  const int world = s.world_size();
  const bool stage3 = runs_zero3_engine(s);
  // One rank runs the single-device optimizer; stage 0 replicates the optimizer (one owner).
  const int owners = world == 1 || s.stage == 0 ? 1 : world;
  const ZeroLayout layout = make_zero_layout(trainable, owners, s.reduce_bucket_size);
  const std::int64_t owned = world == 1 ? psi_trainable : layout.partition_numel;

  MemoryEstimate e;
  e.ranks_per_node = s.gpus_per_node;
  e.model_parameters = psi;
  e.trainable_parameters = psi_trainable;
  // Adapters (LoRA) are working weights beside the frozen model.
  std::int64_t weights = psi + (s.full_finetuning() ? 0 : psi_trainable);
  std::int64_t host_weights = 0;
  if (stage3) {
    const std::vector<std::int64_t> none;
    const std::vector<std::int64_t>& adapters = s.full_finetuning() ? none : trainable;
    const std::int64_t shard = stage3_shard_numel(all, s) + stage3_shard_numel(adapters, s);
    weights = stage3_whole_numel(all, s) + stage3_whole_numel(adapters, s) + (s.offload_param ? 0 : shard);
    if (s.offload_param) host_weights = shard;  // parameter offload: the shard lives in host memory
  }
  e.gpu.parameters = width * weights;
  if (s.quantized_base) {
    const QuantizedLinears q = quantized_linears(config, s.double_quant);
    e.gpu.parameters += q.bytes - width * q.numel;
    e.transient += width * q.largest_layer;
  }
  // Stage 1 accumulates whole gradients until the boundary; the others only their part,
  // which optimizer offload keeps in host memory under ZeRO (one rank without ZeRO-3 runs
  // the single-device optimizer, whose gradients stay on the device).
  // A partial offload (ratio below 1) keeps its gradients on the GPU, and the master weights
  // and moments of the device's share.
  const bool host_gradients = s.offload && s.offload_ratio >= 1.0 && (world > 1 || stage3);
  const std::int64_t gradient_width = static_cast<std::int64_t>(dtype_size(gradient_partition_dtype(s)));
  const std::int64_t whole_width =
      static_cast<std::int64_t>(dtype_size(whole_gradient_dtype(s.grad_accum_dtype, s.dtype)));
  e.gpu.gradients =
      gradient_width * (host_gradients ? 0 : owned) + (world > 1 && s.stage == 1 ? whole_width * psi_trainable : 0);
  const std::int64_t wire = static_cast<std::int64_t>(dtype_size(s.communication_dtype.value_or(s.dtype)));
  const auto offloaded =
      s.offload ? static_cast<std::int64_t>(std::llround(s.offload_ratio * static_cast<double>(owned))) : 0;
  e.gpu.optimizer_state = 3 * kFp32 * (owned - offloaded);
  e.host.optimizer_state = 3 * kFp32 * offloaded;
  // The host's copies of its share's gradient and of the updated weights.
  e.host.gradients = kFp32 * offloaded;
  e.host.parameters = width * offloaded;
  e.host.parameters += width * host_weights;
  if (stage3) {
    const std::int64_t unit = largest_gathered_unit(config), bucket = std::min(unit, psi_trainable);
    e.transient = 2 * width * unit + wire * (bucket + (bucket + world - 1) / world);
  } else if (world > 1) {
    e.transient += bucket_staging_bytes(layout, wire, s.stage > 0);
  }
  return e;
}

bool recomputes_layers(const MemorySettings& s) { return s.gradient_checkpointing || runs_zero3_engine(s); }

MemoryEstimate estimate_memory(const models::ModelConfig& config, const MemorySettings& settings) {
  MemoryEstimate e = estimate_model_states(config, settings);
  e.activations = activation_bytes(config, settings);
  e.loss = loss_bytes(config, settings);
  e.reserve = kRuntimeReserve;
  return e;
}

std::vector<std::int64_t> lora_trainable_numels(const models::ModelConfig& config, std::int64_t rank,
                                                const std::string& target) {
  ZT_REQUIRE(rank > 0, "--lora_rank must be > 0, got " + std::to_string(rank));
  const std::vector<std::string> names = models::parse_lora_target(target, config);
  // PEFT's rule: a module is targeted when its path is a name or ends with "." + name.
  auto targeted = [&](const std::string& weight_name) {
    const std::string path = weight_name.substr(0, weight_name.rfind(".weight"));
    return std::any_of(names.begin(), names.end(), [&](const std::string& name) {
      return path == name || (path.size() > name.size() && path.ends_with("." + name));
    });
  };
  std::vector<std::int64_t> numels;
  for (const models::LayerSpecs& layer : models::parameter_layout(config).layers)
    for (const auto& spec : layer)
      if (spec && spec->kind == models::ParamKind::kMatrix && targeted(spec->name)) {
        numels.push_back(rank * spec->shape[1]);  // A [rank, in]
        numels.push_back(spec->shape[0] * rank);  // B [out, rank]
      }
  return numels;
}

// The buffers the optimizer allocated (HeldBuffers): the owned master, moments and gradient,
// the offload's host block, stage 1's fp32 accumulation, the gradient buckets staged at the
// moment, and stage 3's shards (in host memory with parameter offload) and whole (persistent)
// parameters.
HeldModelStates held_model_states(const OptimizerEngine& engine, std::int64_t parameter_bytes) {
  const HeldBuffers buffers = engine.held_buffers();
  HeldModelStates held;
  held.gpu.parameters = buffers.working_bytes.value_or(parameter_bytes);
  held.gpu.gradients = buffers.gradient_bytes;
  place_optimizer_state(held, buffers.offload, buffers.state_numel);
  held.host.parameters += buffers.host_working_bytes;  // ZeRO-3 parameter offload's shards
  return held;
}

}  // namespace zt::train
