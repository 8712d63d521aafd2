// The CPU reference of attention: a direct loop per (token, head) in float64 for float64
// inputs and float32 otherwise, the ground truth the CUDA kernels are tested against.
#pragma once

#include "ops/attention/attention_layout.h"

namespace zt::ops::detail {

AttentionOutput attention_forward_cpu(const AttentionLayout& layout, const Tensor& q, const Tensor& k, const Tensor& v,
                                      const AttentionConfig& config, const AttentionPrefix& prefix);

AttentionGrads attention_backward_cpu(const AttentionLayout& layout, const Tensor& grad_out, const Tensor& q,
                                      const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                                      const AttentionConfig& config, const AttentionPrefix& prefix);

}  // namespace zt::ops::detail
