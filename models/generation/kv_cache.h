// Keys and values of the tokens a generation has already seen. A decoder layer hands the cache
// its new tokens' q, k and v and gets their attention back: the cache decides how it stores
// keys and values and which attention reads them. SequenceKvCache below is the simple one (one
// sequence in contiguous buffers); infer/paged_kv_cache.h serves many sequences from blocks.
#pragma once

#include <cstdint>
#include <vector>

#include "models/config/config.h"
#include "models/model_inputs.h"
#include "tensor/tensor.h"

namespace zt::models {

class KvCache {
 public:
  virtual ~KvCache() = default;

  // Called before the layers run on a packed batch of new tokens: throws, saying why, when
  // the batch does not fit what the cache holds (sequence count, room, sliding window).
  virtual void begin_forward(const ModelConfig& config, const PackedShape& shape) = 0;
  // q [tokens, heads, head_dim] and k, v [tokens, kv_heads, head_dim] of `layer` (k after
  // RoPE): stores k and v and returns q's causal attention over each sequence's cached tokens
  // followed by its new ones, [tokens, heads, head_dim].
  virtual Tensor attend(std::int64_t layer, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& cu_seqlens, double softmax_scale) = 0;
  // Called after every layer ran: the new tokens count as cached from now on.
  virtual void end_forward() = 0;
};

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
  std::int64_t pending_ = 0;  // tokens of the forward in flight
  std::vector<Tensor> keys_, values_;  // per layer [capacity, kv_heads, head_dim]
};

}  // namespace zt::models
