#include "infer/persistent_decode.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "models/decoder.h"
#include "ops/rope/rope.h"
#include "runtime/check.h"
#include "runtime/device.h"
#include "runtime/error.h"

namespace zt::infer {
namespace {

using models::LayerWeights;

const void* pointer_of(const LayerWeights& w, int slot) {
  return w[slot].defined() ? w[slot].data().data_ptr() : nullptr;
}

// Rows [first, first + count) of the weight or bias in `slot`: a part of a fused one (q, k and
// v of [q; k; v]; gate and up of [gate; up]); null where the layer has none.
const void* rows_of(const LayerWeights& w, int slot, std::int64_t first, std::int64_t count) {
  return w[slot].defined() ? w[slot].data().narrow(0, first, count).data_ptr() : nullptr;
}

cuda::DecodeLayerPointers layer_pointers(const models::ModelConfig& c, const LayerWeights& w, const PagedKvCache& cache,
                                         std::int64_t layer) {
  cuda::DecodeLayerPointers l;
  l.input_norm = pointer_of(w, models::kInputNorm);
  l.post_norm = pointer_of(w, models::kPostAttentionNorm);
  if (c.fused_qkv) {
    const std::int64_t q = c.q_size(), kv = c.kv_size();
    l.q = rows_of(w, models::kQkv, 0, q);
    l.k = rows_of(w, models::kQkv, q, kv);
    l.v = rows_of(w, models::kQkv, q + kv, kv);
    l.q_bias = rows_of(w, models::kQkvBias, 0, q);
    l.k_bias = rows_of(w, models::kQkvBias, q, kv);
    l.v_bias = rows_of(w, models::kQkvBias, q + kv, kv);
  } else {
    l.q = pointer_of(w, models::kQ);
    l.k = pointer_of(w, models::kK);
    l.v = pointer_of(w, models::kV);
    l.q_bias = pointer_of(w, models::kQBias);
    l.k_bias = pointer_of(w, models::kKBias);
    l.v_bias = pointer_of(w, models::kVBias);
  }
  l.q_norm = pointer_of(w, models::kQNorm);
  l.k_norm = pointer_of(w, models::kKNorm);
  l.o = pointer_of(w, models::kO);
  l.o_bias = pointer_of(w, models::kOBias);
  const std::int64_t ffn = c.intermediate_size;
  if (c.fused_gate_up) {
    l.gate = rows_of(w, models::kGateUp, 0, ffn);
    l.up = rows_of(w, models::kGateUp, ffn, ffn);
    l.gate_bias = rows_of(w, models::kGateUpBias, 0, ffn);
    l.up_bias = rows_of(w, models::kGateUpBias, ffn, ffn);
  } else {
    l.gate = pointer_of(w, models::kGate);
    l.up = pointer_of(w, models::kUp);
  }
  l.down = pointer_of(w, models::kDown);
  l.down_bias = pointer_of(w, models::kDownBias);
  l.key_pool = cache.key_pool(layer).data_ptr();
  l.value_pool = cache.value_pool(layer).data_ptr();
  return l;
}

cuda::DecodeModelDims model_dims(const models::ModelConfig& c, const PagedKvCache& cache, std::int64_t max_blocks) {
  cuda::DecodeModelDims d;
  d.layers = static_cast<int>(c.num_layers);
  d.hidden = static_cast<int>(c.hidden_size);
  d.ffn = static_cast<int>(c.intermediate_size);
  d.heads = static_cast<int>(c.num_heads);
  d.kv_heads = static_cast<int>(c.num_kv_heads);
  d.head_dim = static_cast<int>(c.head_dim);
  d.vocab = static_cast<int>(c.vocab_size);
  d.norm_eps = static_cast<float>(c.norm_eps);
  d.round_normalized = c.norm_style == ops::RmsNormStyle::kQwen;
  d.softmax_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_dim)));
  const ops::GpuRope rope = ops::gpu_rope("persistent decode", c.head_dim, c.rope);
  d.rope = rope.shape;
  d.frequencies = rope.frequencies;
  d.num_blocks = cache.key_pool(0).size(0);
  d.block_size = static_cast<int>(cache.block_size());
  d.max_blocks_per_seq = static_cast<int>(max_blocks);
  return d;
}

bool any_sliding(const models::ModelConfig& c) {
  return std::find(c.sliding_layers.begin(), c.sliding_layers.end(), true) != c.sliding_layers.end();
}

}  // namespace

std::string PersistentDecode::unsupported(const models::CausalLM& model, const PagedKvCache& cache) {
  const models::ModelConfig& c = model.config();
  if (c.sandwich_norms) return "post-attention and post-MLP norms (glm4) are not in the kernel";
  if (any_sliding(c)) return "sliding-window layers are not in the kernel";
  if (!model.lora().empty() && model.adapters_enabled()) return "an unmerged LoRA adapter is not in the kernel";
  if (model.parameter_gatherer() != nullptr) return "the weights are gathered per layer (4-bit or ZeRO-3)";
  if (model.partial_sum_reducer()) return "tensor parallelism";
  if (model.activation_recorder() != nullptr) return "activations are being recorded";
  if (cache.prefix_length() > 0) return "a P-Tuning prefix";
  if (model.dtype() != DType::kBF16 && model.dtype() != DType::kF16) return "the weights are not bfloat16 or float16";
  if (cache.key_pool(0).dtype() != model.dtype()) return "the KV cache's dtype is not the weights'";
  if (!model.device().is_cuda()) return "the model is not on a GPU";
  return "";
}

std::vector<cuda::DecodeLayerPointers> decode_layer_pointers(const models::CausalLM& model, const PagedKvCache& cache) {
  std::vector<cuda::DecodeLayerPointers> layers;
  for (std::int64_t layer = 0; layer < model.config().num_layers; ++layer)
    layers.push_back(layer_pointers(model.config(), model.layer_weights(layer), cache, layer));
  return layers;
}

PersistentDecode::PersistentDecode(const models::CausalLM& model, const PagedKvCache& cache, std::int64_t max_blocks)
    : model_(model), dims_(model_dims(model.config(), cache, max_blocks)) {
  const std::vector<cuda::DecodeLayerPointers> layers = decode_layer_pointers(model, cache);
  const auto bytes = static_cast<std::int64_t>(layers.size() * sizeof(cuda::DecodeLayerPointers));
  Tensor host = Tensor::empty({bytes}, DType::kU8);
  std::memcpy(host.data_ptr(), layers.data(), static_cast<std::size_t>(bytes));
  layer_table_ = host.to(model.device());
}

bool PersistentDecode::takes_rows(std::int64_t rows) const {
  if (rows > cuda::kPersistentDecodeMaxRows) return false;
  return *cuda::persistent_decode_unsupported(dims_, static_cast<int>(rows), model_.dtype(), model_.device().index) ==
         '\0';
}

void PersistentDecode::run(const DecodeStepBuffers& b, const Tensor& logits, const Tensor& argmax, cudaStream_t stream,
                           const Tensor& stage_marks) {
  DeviceGuard guard(model_.device().index);
  auto found = scratch_.find(b.rows);
  if (found == scratch_.end()) {
    const auto bytes = static_cast<std::int64_t>(
        cuda::persistent_decode_workspace_bytes(dims_, static_cast<int>(b.rows), model_.dtype()));
    found = scratch_.emplace(b.rows, Tensor::empty({bytes}, DType::kU8, model_.device())).first;
  }
  cuda::DecodeStepPointers step;
  step.layers = static_cast<const cuda::DecodeLayerPointers*>(layer_table_.data_ptr());
  step.embedding = model_.embedding_weight().data().data_ptr();
  step.final_norm = model_.final_norm_weight().defined() ? model_.final_norm_weight().data().data_ptr() : nullptr;
  step.lm_head = model_.lm_head_weight().data().data_ptr();
  step.ids = b.ids.data<std::int64_t>();
  step.positions = b.positions.data<std::int64_t>();
  step.slots = b.slots.data<std::int64_t>();
  step.block_table = b.block_table.data<std::int32_t>();
  step.seq_lens = b.seq_lens.data<std::int32_t>();
  step.logits = logits.data_ptr();
  step.argmax = argmax.data<std::int64_t>();
  if (stage_marks.defined()) {
    ZT_REQUIRE(stage_marks.numel() >= cuda::persistent_decode_stage_marks(dims_) && stage_marks.dtype() == DType::kI64,
               "persistent decode: stage_marks must hold persistent_decode_stage_marks(dims) int64 values");
    step.stage_marks = static_cast<std::uint64_t*>(stage_marks.data_ptr());
  }
  const Tensor& workspace = found->second;
  cuda::persistent_decode_step(dims_, step, static_cast<int>(b.rows), model_.dtype(),
                               {workspace.data_ptr(), static_cast<std::size_t>(workspace.numel())}, stream);
}

}  // namespace zt::infer
