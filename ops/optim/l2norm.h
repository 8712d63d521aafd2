// The L2 norm of a list of tensors taken together, sqrt(sum of x² over every element of
// every tensor): the global gradient norm that gradient clipping divides by.
#pragma once

#include <vector>

#include "tensor/tensor.h"

namespace zt::ops {

// A 0-dim tensor on the tensors' device, float32 (float64 when a CPU tensor is float64).
// On the GPU all tensors go through a few multi-tensor launches; squares are summed in
// float32 per 64Ki-element chunk and in float64 across chunks and tensors, in an order fixed
// by the list, so the result is the same on every run (float64 throughout on the CPU); a
// non-finite element gives a non-finite norm. The
// tensors may differ in dtype and shape; an empty list gives a CPU 0.
Tensor l2_norm(const std::vector<Tensor>& tensors);

}  // namespace zt::ops
