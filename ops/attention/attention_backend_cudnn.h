// attn_impl=cudnn: the checks, the batch layout and the tensors around cuda/attention/cudnn/cudnn_attention.h.
// Empty sequences are left out of what cuDNN sees; a batch whose sequences all have one
// length runs cuDNN's dense layout, any other its ragged (variable-length) layout.
#pragma once

#include "ops/attention/attention.h"

namespace zt::ops::detail {

AttentionOutput cudnn_attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& cu_seqlens,
                                        const AttentionConfig& config, const AttentionPrefix& prefix);
AttentionGrads cudnn_attention_backward(const Tensor& grad_out, const Tensor& q, const Tensor& k, const Tensor& v,
                                        const Tensor& out, const Tensor& lse, const Tensor& cu_seqlens,
                                        const AttentionConfig& config, const AttentionPrefix& prefix);

}  // namespace zt::ops::detail
