// The L2 norm of a list of tensors taken together, sqrt(sum of x² over every element of
// every tensor): the global gradient norm that gradient clipping divides by.
#pragma once

#include <vector>

#include "tensor/tensor.h"

namespace zt::ops {

// A 0-dim tensor on the tensors' device, float32 (float64 when a CPU tensor is float64).
// Squares are summed in float32 per GPU block and in float64 across blocks and tensors (in
// float64 throughout on the CPU); a non-finite element gives a non-finite norm. The
// tensors may differ in dtype and shape; an empty list gives a CPU 0.
Tensor l2_norm(const std::vector<Tensor>& tensors);

}  // namespace zt::ops
