// How much memory a training run needs, per GPU and in each node's host memory, for every
// ZeRO stage with and without optimizer offload: what `zerotune estimate` prints, and what
// the trainer's start-up report measures on the real buffers.
//
// Model states are zerotune's own buffers, not DeepSpeed's constants. Per trainable
// parameter a rank holds an fp32 master weight, two fp32 Adam moments (12 bytes) and a
// gradient for the part it owns, and the working weights (2 bytes in bf16/fp16) of the
// model. The owned gradient is in the working dtype under stages 1 and 2 over several ranks
// without offload (DeepSpeed's default grad_accum_dtype; "fp32" in the config keeps 4 bytes),
// fp32 everywhere else (gradient_partition_dtype). Gradients travel to it through bucket
// buffers in the communication dtype (train/zero/gradient_buckets.h), at most two of them at
// once under stages 0-2, each freed once reduced; stage 1 also accumulates a whole gradient
// per parameter, in the same dtype, until the accumulation boundary. So with Ψ parameters, Ψt
// trainable and N ranks (bf16, padding aside):
//   one rank     2Ψ + 16Ψt             (the single-device optimizer, whatever the stage)
//   stage 0      2Ψ + 16Ψt             (the replicated optimizer)
//   stage 1      2Ψ + 2Ψt + 14Ψt/N     (whole gradients and the partition; fp32: 2Ψ + 4Ψt + 16Ψt/N)
//   stage 2      2Ψ + 2Ψt/N + 12Ψt/N   (the ZeRO paper's 2Ψ + 14Ψ/N; fp32: 2Ψ + 16Ψt/N)
//   stage 3      2Ψ/N + 16Ψt/N         (train/zero/zero3_optimizer.h; parameters of at most
//                                       stage3_param_persistence_threshold elements stay whole)
// plus a transient: under stages 0-2 the two largest gradient buckets (reduce_bucket_size
// elements or one larger parameter each) and, from stage 1 on, one rank's chunk of a bucket
// (the reduce-scatter's output); under stage 3 two gathered modules in the working dtype and
// one module's gradient bucket with its chunk. Optimizer offload
// (train/optim/optimizer_offload.h; stages 1-3) moves master and moments to host memory, which
// also holds a copy of the owned fp32 gradient and of the new working weights (18 bytes per
// owned parameter in bf16); the GPU keeps the rest. Parameter offload (stage 3,
// train/zero/zero3_partitioner.h) moves each rank's working-weight shard (2Ψ/N) to host memory
// too: the GPU keeps the parameters that stay whole, and the gathered modules (the transient).
//
// QLoRA (quantized_base): the decoder's linear weights take Q(n) = n/2 + 4·n/64 bytes each (n/2 +
// n/64 + 4·n/16384 + 1 KiB under double quantization: ops/quant4/blockwise.h quantized_bytes)
// instead of 2n; embeddings, norms, biases and the LM head stay in the working dtype; one
// layer's linears are dequantized at a time (a transient in the working dtype); the layers are
// recomputed in backward under gradient checkpointing (the default of a 4-bit base), otherwise
// their activations are kept as a dense base's are. A 7B model's 6.5B linear weights: 3.5 GiB instead of 13 GiB.
//
// Activations are the tensors autograd saves in the packed (varlen) forward of
// models/decoder.cpp, per token and layer, plus one layer's worth of gradients in flight
// during backward; with gradient checkpointing (and always under stage 3, which recomputes
// each layer in backward) only each layer's input is kept, plus one layer recomputed. The
// fused loss adds one chunk of fp32 logits (at most 1 GiB), the hidden gradient it computes
// in the forward, and an fp32 LM-head gradient when the head trains. Not counted: the CUDA
// context, library workspaces and allocator fragmentation (a fixed reserve stands in for
// them), and host memory for data loading.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/config/config.h"
#include "runtime/dtype.h"
#include "train/optim/optimizer.h"

namespace zt::train {

struct MemorySettings {
  int stage = 0;
  bool offload = false;
  bool offload_param = false;  // stage 3: each rank's shard of the working weights in host memory
  double offload_ratio = 1.0;  // offload_optimizer.ratio: the CPU Adam's share; below 1 the gradients stay on the GPU
  int gpus_per_node = 1;
  int nodes = 1;
  std::int64_t micro_batch = 1;
  std::int64_t max_length = 1024;  // tokens per sequence: a micro-batch packs micro_batch of them
  bool gradient_checkpointing = false;
  DType dtype = DType::kBF16;  // working weights and activations
  // The trainable parameters' sizes in the trainer's order; empty: every model parameter.
  std::vector<std::int64_t> trainable_numels = {};
  std::int64_t reduce_bucket_size = 500'000'000;  // DeepSpeed's default, in elements
  std::optional<DType> communication_dtype{};     // communication_data_type; unset: dtype
  std::optional<DType> grad_accum_dtype{};        // data_types.grad_accum_dtype; unset: dtype
  std::int64_t persistence_threshold = 100'000;   // stage3_param_persistence_threshold
  // QLoRA (models/quant/): the decoder's linear weights held in bitsandbytes' 4 bits, blocks of
  // 64, each layer's dequantized while it computes and recomputed in backward. LoRA only, and
  // never stage 3.
  bool quantized_base = false;
  bool double_quant = true;  // a block's scale in 1 byte (+ the nested scales) rather than 4

  int world_size() const { return gpus_per_node * nodes; }
  bool full_finetuning() const { return trainable_numels.empty(); }
};

// Bytes of model state, by what they are.
struct ModelStateBytes {
  std::int64_t parameters = 0;       // working weights
  std::int64_t gradients = 0;        // gradients: owned partition + stage 1's accumulation
  std::int64_t optimizer_state = 0;  // fp32 master weights and Adam moments
  std::int64_t total() const { return parameters + gradients + optimizer_state; }
};

struct MemoryEstimate {
  ModelStateBytes gpu;           // per GPU
  ModelStateBytes host;          // per rank, in host memory (offload; parameters: the host working copy)
  std::int64_t transient = 0;    // per GPU: gradient buckets in flight; stage 3 also gathered modules
  std::int64_t activations = 0;  // per GPU: saved tensors + gradients in flight
  std::int64_t loss = 0;         // per GPU: the fused loss's working set
  std::int64_t reserve = 0;      // per GPU: CUDA context, workspaces, fragmentation
  int ranks_per_node = 1;
  std::int64_t model_parameters = 0;      // Ψ: the model's own (not the adapters')
  std::int64_t trainable_parameters = 0;  // Ψt

  std::int64_t gpu_total() const { return gpu.total() + transient + activations + loss + reserve; }
  std::int64_t host_per_node() const { return host.total() * ranks_per_node; }
};

MemoryEstimate estimate_memory(const models::ModelConfig& config, const MemorySettings& settings);

// The dtype of the owned gradient partition (and stage 1's whole gradients) on the GPU: the
// working dtype, or grad_accum_dtype, under stages 1 and 2 over several ranks without
// optimizer offload, as the engine keeps it (train/zero/zero_engine.h); fp32 otherwise.
DType gradient_partition_dtype(const MemorySettings& settings);

// Whether backward recomputes each layer's forward: gradient checkpointing, or stage 3's
// engine, which always does (it gathers each module again for its backward).
bool recomputes_layers(const MemorySettings& settings);

// The model states alone (what the trainer's start-up report is compared with).
MemoryEstimate estimate_model_states(const models::ModelConfig& config, const MemorySettings& settings);

// The sizes of the LoRA matrices --lora_rank and --lora_target attach, in the trainer's order.
std::vector<std::int64_t> lora_trainable_numels(const models::ModelConfig& config, std::int64_t rank,
                                                const std::string& target);

struct HeldModelStates {
  ModelStateBytes gpu;   // on the device the model trains on
  ModelStateBytes host;  // offloaded
};

// What an optimizer engine has allocated on this rank, from its buffers; `parameter_bytes`
// are the model's working weights.
HeldModelStates held_model_states(const OptimizerEngine& engine, std::int64_t parameter_bytes);

}  // namespace zt::train
