// Keys and values of the tokens a generation has already seen, one buffer per layer sized
// for the whole generation up front, so each step writes its new rows in place and the
// attention reads the filled part as its prefix without copying.
#pragma once

#include <cstdint>
#include <vector>

#include "models/config.h"
#include "tensor/tensor.h"

namespace zt::models {

class KvCache {
 public:
  // Room for `capacity` tokens of one sequence (prompt + new tokens).
  KvCache(const ModelConfig& config, std::int64_t capacity, DType dtype, Device device);

  std::int64_t length() const { return length_; }
  std::int64_t capacity() const { return capacity_; }

  // The cached keys / values of `layer` as an attention prefix [1, length, kv_heads,
  // head_dim]; undefined while the cache is empty.
  Tensor keys(std::int64_t layer) const;
  Tensor values(std::int64_t layer) const;

  // Writes `k`, `v` [tokens, kv_heads, head_dim] of `layer` after the cached ones; they
  // become visible once advance() counts them (every layer writes before that).
  void write(std::int64_t layer, const Tensor& k, const Tensor& v);
  // Counts `tokens` newly written rows; throws when they would not fit.
  void advance(std::int64_t tokens);
  // Throws, saying by how much, unless `tokens` more rows fit.
  void require_room(std::int64_t tokens) const;

 private:
  Tensor prefix(const std::vector<Tensor>& buffers, std::int64_t layer) const;

  std::int64_t capacity_ = 0;
  std::int64_t length_ = 0;
  std::vector<Tensor> keys_, values_;  // per layer [capacity, kv_heads, head_dim]
};

}  // namespace zt::models
