// In-place accumulation: dst += src * factor, dst and src of any float dtypes and one shape.
// The product and the sum are taken in float32, rounding once each, and the sum is rounded to
// dst's dtype once: for a 16-bit dst that is an fp32 add of the two, stored once, with no
// temporary. What gradient accumulation across micro-batches and ZeRO's gradient partitions
// (fp32, or 16-bit under DeepSpeed's default grad_accum_dtype) are built on.
#pragma once

#include "tensor/tensor.h"

namespace zt::ops {

void accumulate_(const Tensor& dst, const Tensor& src, double factor = 1.0);

}  // namespace zt::ops
