// Checks of a packed batch before it reaches the ops, so a malformed batch fails with the
// model's words (which tensor, which sequence) rather than deep inside a kernel.
#pragma once

#include <cstdint>

#include "models/config/config.h"
#include "tensor/tensor.h"

namespace zt::models {

struct PackedShape {
  std::int64_t tokens = 0;
  std::int64_t sequences = 0;
  std::int64_t max_seqlen = 0;
};

// input_ids and positions [tokens] integer, cu_seqlens [sequences + 1] integer, starting at 0,
// non-decreasing, ending at tokens. cu_seqlens is read on the host.
PackedShape check_packed_inputs(const Tensor& input_ids, const Tensor& positions, const Tensor& cu_seqlens);

// zerotune's attention has no sliding window: a config that enables one is accepted as long as
// no sequence (with `cached` earlier tokens) is longer than the window, where it changes nothing.
void check_sliding_window(const ModelConfig& config, const PackedShape& shape, std::int64_t cached);

}  // namespace zt::models
