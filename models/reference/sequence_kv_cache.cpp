#include "models/reference/sequence_kv_cache.h"

#include "ops/attention/attention.h"
#include "runtime/error.h"

namespace zt::models {

SequenceKvCache::SequenceKvCache(const ModelConfig& config, std::int64_t capacity, DType dtype, Device device)
    : capacity_(capacity) {
  ZT_REQUIRE(capacity > 0, "KV cache: capacity must be positive, got " + std::to_string(capacity));
  const Shape shape{capacity, config.num_kv_heads, config.head_dim};
  for (std::int64_t i = 0; i < config.num_layers; ++i) {
    keys_.push_back(Tensor::empty(shape, dtype, device));
    values_.push_back(Tensor::empty(shape, dtype, device));
  }
}

Tensor SequenceKvCache::prefix(const std::vector<Tensor>& buffers, std::int64_t layer) const {
  ZT_REQUIRE(
      layer >= 0 && layer < static_cast<std::int64_t>(buffers.size()),
      "KV cache: layer " + std::to_string(layer) + " out of range (" + std::to_string(buffers.size()) + " layers)");
  if (length_ == 0) return Tensor();
  return buffers[static_cast<std::size_t>(layer)].narrow(0, 0, length_).unsqueeze(0);
}

Tensor SequenceKvCache::keys(std::int64_t layer) const { return prefix(keys_, layer); }
Tensor SequenceKvCache::values(std::int64_t layer) const { return prefix(values_, layer); }

void SequenceKvCache::require_room(std::int64_t tokens) const {
  ZT_REQUIRE(length_ + tokens <= capacity_, "KV cache: " + std::to_string(tokens) + " more tokens do not fit after " +
                                                std::to_string(length_) + " (capacity " + std::to_string(capacity_) +
                                                ")");
}

void SequenceKvCache::write(std::int64_t layer, const Tensor& k, const Tensor& v) {
  prefix(keys_, layer);  // checks the layer index
  const std::int64_t tokens = k.size(0);
  require_room(tokens);
  keys_[static_cast<std::size_t>(layer)].narrow(0, length_, tokens).copy_from(k);
  values_[static_cast<std::size_t>(layer)].narrow(0, length_, tokens).copy_from(v);
}

void SequenceKvCache::prepend(const std::vector<Tensor>& keys, const std::vector<Tensor>& values) {
  ZT_REQUIRE(length_ == 0,
             "KV cache: a prefix goes in before the prompt, not after " + std::to_string(length_) + " cached tokens");
  ZT_REQUIRE(keys.size() == keys_.size() && values.size() == keys_.size(),
             "KV cache: a prefix needs keys and values for each of the " + std::to_string(keys_.size()) + " layers");
  for (std::size_t layer = 0; layer < keys.size(); ++layer)
    write(static_cast<std::int64_t>(layer), keys[layer], values[layer]);
  length_ += keys.front().size(0);
}

void SequenceKvCache::begin_forward(const ModelConfig& config, const PackedShape& shape) {
  ZT_REQUIRE(shape.sequences == 1,
             "forward with a KV cache takes one sequence, got " + std::to_string(shape.sequences));
  check_sliding_window(config, shape, length_);
  require_room(shape.tokens);
  pending_ = shape.tokens;
}

Tensor SequenceKvCache::attend(std::int64_t layer, const Tensor& q, const Tensor& k, const Tensor& v,
                               const Tensor& cu_seqlens, double softmax_scale) {
  const ops::AttentionPrefix cached{keys(layer), values(layer)};
  Tensor out =
      ops::attention_forward(q, k, v, cu_seqlens, {.softmax_scale = softmax_scale, .causal = true}, cached).out;
  write(layer, k, v);
  return out;
}

void SequenceKvCache::end_forward() {
  length_ += pending_;
  pending_ = 0;
}

}  // namespace zt::models
