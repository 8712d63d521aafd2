// Inverted dropout whose mask is drawn from the Philox stream (seed, offset): element i of
// x (in row-major order) is kept when uniform(seed, offset, i) >= p and scaled by 1 / (1 - p).
// The mask is the same on CPU and GPU, bit for bit, and the backward regenerates it from
// (seed, offset) rather than storing it. A draw over n elements consumes
// philox::blocks_for(n) blocks: the next independent draw starts at offset + blocks_for(n).
// p = 0 is the identity; p = 1 gives zeros.
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace zt::ops {

struct DropoutConfig {
  double p = 0.0;
  std::uint64_t seed = 0;
  std::uint64_t offset = 0;
};

Tensor dropout_forward(const Tensor& x, const DropoutConfig& config);

// grad_out masked and scaled as the forward with the same config did.
Tensor dropout_backward(const Tensor& grad_out, const DropoutConfig& config);

}  // namespace zt::ops
