// Embedding lookup: rows of a [vocab, hidden] table picked by integer ids, and the gradient
// of the table, where repeated ids add up.
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace zt::ops {

// weight [vocab, hidden], ids int32/int64 of any shape -> [ids..., hidden]. An id outside
// [0, vocab) throws zt::Error naming the id, its position and the vocabulary size (on the GPU
// the check runs on the device and synchronises the stream once).
Tensor embedding_forward(const Tensor& weight, const Tensor& ids);

// dweight [vocab_size, hidden]: each grad_out row [ids..., hidden] added into the row of its
// id, accumulated in float32 (float64 for float64). On the GPU the default adds with float
// atomics, whose order, and so the last bits, vary between runs; `deterministic` sums each
// id's rows in token order instead and gives the same bits every run. The CPU is always
// deterministic. With a `sink` (float32 [vocab_size, hidden], contiguous, on grad_out's
// device: a trained table's gradient buffer) the rows are added into the sink instead and the
// result is undefined: on the GPU the float32 sums go straight in (in the same order as without
// the sink), no dense [vocab, hidden] gradient made, rounded to grad_out's dtype and added
// again; on the CPU the dense gradient is made and added, the bits a delivered one gives.
Tensor embedding_backward(const Tensor& grad_out, const Tensor& ids, std::int64_t vocab_size,
                          bool deterministic = false, const Tensor& sink = Tensor());

}  // namespace zt::ops
