#include "models/kv_cache.h"

#include "runtime/error.h"

namespace zt::models {

KvCache::KvCache(const ModelConfig& config, std::int64_t capacity, DType dtype, Device device)
    : capacity_(capacity) {
  ZT_REQUIRE(capacity > 0, "KV cache: capacity must be positive, got " + std::to_string(capacity));
  const Shape shape{capacity, config.num_kv_heads, config.head_dim};
  for (std::int64_t i = 0; i < config.num_layers; ++i) {
    keys_.push_back(Tensor::empty(shape, dtype, device));
    values_.push_back(Tensor::empty(shape, dtype, device));
  }
}

Tensor KvCache::prefix(const std::vector<Tensor>& buffers, std::int64_t layer) const {
  ZT_REQUIRE(layer >= 0 && layer < static_cast<std::int64_t>(buffers.size()),
             "KV cache: layer " + std::to_string(layer) + " out of range (" + std::to_string(buffers.size()) +
                 " layers)");
  if (length_ == 0) return Tensor();
  return buffers[static_cast<std::size_t>(layer)].narrow(0, 0, length_).unsqueeze(0);
}

Tensor KvCache::keys(std::int64_t layer) const { return prefix(keys_, layer); }
Tensor KvCache::values(std::int64_t layer) const { return prefix(values_, layer); }

void KvCache::require_room(std::int64_t tokens) const {
  ZT_REQUIRE(length_ + tokens <= capacity_,
             "KV cache: " + std::to_string(tokens) + " more tokens do not fit after " + std::to_string(length_) +
                 " (capacity " + std::to_string(capacity_) + ")");
}

void KvCache::write(std::int64_t layer, const Tensor& k, const Tensor& v) {
  prefix(keys_, layer);  // checks the layer index
  const std::int64_t tokens = k.size(0);
  require_room(tokens);
  keys_[static_cast<std::size_t>(layer)].narrow(0, length_, tokens).copy_from(k);
  values_[static_cast<std::size_t>(layer)].narrow(0, length_, tokens).copy_from(v);
}

void KvCache::advance(std::int64_t tokens) {
  require_room(tokens);
  length_ += tokens;
}

}  // namespace zt::models
