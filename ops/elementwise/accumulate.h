// In-place accumulation into a float32 buffer: dst += src * factor, src of any float dtype
// and dst's shape. What gradient accumulation across micro-batches and the fp32 gradient
// partitions of ZeRO are built on. The product and sum round to float32 once each.
#pragma once

#include "tensor/tensor.h"

namespace zt::ops {

void accumulate_(const Tensor& dst, const Tensor& src, double factor = 1.0);

}  // namespace zt::ops
