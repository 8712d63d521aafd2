// Shapes and random inputs shared by the attention CPU and GPU tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "ops/attention.h"

namespace zt::testing {

struct AttentionCase {
  std::vector<std::int64_t> lengths;  // one per sequence, packed back to back
  std::int64_t heads = 4;
  std::int64_t kv_heads = 2;
  std::int64_t head_dim = 8;
  std::int64_t prefix_len = 0;
  bool causal = true;

  std::int64_t total() const {
    std::int64_t sum = 0;
    for (std::int64_t l : lengths) sum += l;
    return sum;
  }
  std::int64_t batch() const { return static_cast<std::int64_t>(lengths.size()); }
  ops::AttentionConfig config() const { return {1.0 / std::sqrt(static_cast<double>(head_dim)), causal}; }
  std::string str() const {
    std::string s = "lengths {";
    for (std::size_t i = 0; i < lengths.size(); ++i) s += (i ? ", " : "") + std::to_string(lengths[i]);
    return s + "} heads " + std::to_string(heads) + "/" + std::to_string(kv_heads) + " head_dim " +
           std::to_string(head_dim) + " prefix " + std::to_string(prefix_len) + (causal ? " causal" : " full");
  }
};

struct AttentionTensors {
  Tensor q, k, v, cu_seqlens;
  ops::AttentionPrefix prefix;
};

inline Tensor cu_seqlens_of(const std::vector<std::int64_t>& lengths) {
  std::vector<double> offsets{0.0};
  for (std::int64_t l : lengths) offsets.push_back(offsets.back() + static_cast<double>(l));
  return Tensor::from_values(offsets, {static_cast<std::int64_t>(offsets.size())}, DType::kI32);
}

// CPU tensors of `dtype` with standard normal values.
inline AttentionTensors random_attention_inputs(const AttentionCase& c, DType dtype, std::uint64_t seed) {
  AttentionTensors t;
  t.q = Tensor::normal({c.total(), c.heads, c.head_dim}, seed, 0, 0.0, 1.0, dtype);
  t.k = Tensor::normal({c.total(), c.kv_heads, c.head_dim}, seed + 1, 0, 0.0, 1.0, dtype);
  t.v = Tensor::normal({c.total(), c.kv_heads, c.head_dim}, seed + 2, 0, 0.0, 1.0, dtype);
  t.cu_seqlens = cu_seqlens_of(c.lengths);
  if (c.prefix_len > 0) {
    Shape prefix_shape{c.batch(), c.prefix_len, c.kv_heads, c.head_dim};
    t.prefix.k = Tensor::normal(prefix_shape, seed + 3, 0, 0.0, 1.0, dtype);
    t.prefix.v = Tensor::normal(prefix_shape, seed + 4, 0, 0.0, 1.0, dtype);
  }
  return t;
}

}  // namespace zt::testing
