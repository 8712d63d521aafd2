// The KV cache of the reference generation path (models/reference/generate.h): one sequence
// in contiguous buffers. Tests use it, through models::generate, as the oracle of infer/'s
// paged cache; users' generation runs in infer/.
#pragma once

#include <cstdint>
#include <vector>

#include "models/generation/kv_cache.h"

namespace zt::models {

// One sequence, one buffer per layer sized for the whole generation up front, so each step
// writes its new rows in place and attention reads the filled part as its prefix.
class SequenceKvCache : public KvCache {
 public:
  // Room for `capacity` tokens of one sequence (prompt + new tokens).
  SequenceKvCache(const ModelConfig& config, std::int64_t capacity, DType dtype, Device device);

  std::int64_t length() const { return length_; }
  std::int64_t capacity() const { return capacity_; }

  // The cached keys / values of `layer` as an attention prefix [1, length, kv_heads,
  // head_dim]; undefined while the cache is empty.
  Tensor keys(std::int64_t layer) const;
  Tensor values(std::int64_t layer) const;

  // Puts `tokens` rows that every later token attends to (a P-Tuning prefix) ahead of the
  // prompt: k, v per layer [tokens, kv_heads, head_dim].
  void prepend(const std::vector<Tensor>& keys, const std::vector<Tensor>& values);

  void begin_forward(const ModelConfig& config, const PackedShape& shape) override;
  Tensor attend(std::int64_t layer, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& cu_seqlens,
                double softmax_scale) override;
  void end_forward() override;

 private:
  Tensor prefix(const std::vector<Tensor>& buffers, std::int64_t layer) const;
  void write(std::int64_t layer, const Tensor& k, const Tensor& v);
  void require_room(std::int64_t tokens) const;

  std::int64_t capacity_ = 0;
  std::int64_t length_ = 0;
  std::int64_t pending_ = 0;           // tokens of the forward in flight
  std::vector<Tensor> keys_, values_;  // per layer [capacity, kv_heads, head_dim]
};

}  // namespace zt::models
