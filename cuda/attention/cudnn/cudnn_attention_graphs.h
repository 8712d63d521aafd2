// The cuDNN attention graphs (forward and backward) and the pieces both share: the uids of
// the tensors bound at execution, the packed q/k/v layouts, the ragged-batch inputs and the
// score masks. The node list follows cuDNN's fused flash-attention pattern: matmul, scale,
// masks, softmax with statistics, matmul; and its backward counterpart.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cuda/attention/cudnn/cudnn_attention.h"
#include "cuda/attention/cudnn/cudnn_attention_graph.h"

namespace zt::cuda::cudnn_attention {

// Tensors bound in the variant pack. Virtual tensors take uids from 1000 on.
enum Uid : std::int64_t {
  kQ = 1,
  kK,
  kV,
  kO,
  kStats,
  kScale,
  kGradOut,
  kGradQ,
  kGradK,
  kGradV,
  kSeqLenQ,
  kSeqLenKv,
  kOffsetsQ,
  kOffsetsK,
  kOffsetsV,
  kOffsetsO,
  kOffsetsStats,
  kNegativeInfinity,
  kOne,
  kSoftmaxSum,  // backward workspace: rowsum(dO ∘ O), float32 [batch, heads, seq, 1]
  kGradQAccum,  // backward workspace: dQ in float32 [batch, heads, seq, head_dim]
};

std::string describe(const CudnnAttentionShape& shape);
cudnnDataType_t io_type(DType dtype);

// [batch, heads, seq, head_dim] over the packed [tokens, heads, head_dim] storage.
cudnn_graph::TensorSpec packed_spec(const CudnnAttentionShape& shape, std::int64_t heads, std::int64_t offsets_uid);
// The same storage read as [batch, heads, head_dim, seq] (dims and strides 2, 3 swapped).
cudnn_graph::TensorSpec transposed(cudnn_graph::TensorSpec spec);
// Stats as the layout in cudnn_attention.h says: [batch, heads, seq, 1] float32.
cudnn_graph::TensorSpec stats_spec(const CudnnAttentionShape& shape);

// Whether the graph masks scores (and so binds kNegativeInfinity): causal or ragged.
bool uses_mask_value(const CudnnAttentionShape& shape);

// Adds the by-value scalars (scale, -inf when masking, and 1 when `with_one`) and, for a ragged batch, the
// sequence lengths and offsets.
void add_common_inputs(cudnn_graph::GraphBuilder& graph, const CudnnAttentionShape& shape, bool with_one);

std::vector<std::int64_t> score_dims(const CudnnAttentionShape& shape);     // [batch, heads, seq, seq]
std::vector<std::int64_t> score_strides(const CudnnAttentionShape& shape);  // row-major
std::vector<std::int64_t> row_dims(const CudnnAttentionShape& shape);       // [batch, heads, seq, 1]
std::vector<std::int64_t> row_strides(const CudnnAttentionShape& shape);

// score -> a float32 virtual of the same shape: score * scale.
std::int64_t scaled(cudnn_graph::GraphBuilder& graph, const CudnnAttentionShape& shape, std::int64_t score,
                    const std::string& what);
// score with -inf outside each sequence's length (ragged batches only), returned as a new uid.
std::int64_t padding_mask(cudnn_graph::GraphBuilder& graph, const CudnnAttentionShape& shape, std::int64_t score);
// score with -inf where the key follows the query (causal only), returned as a new uid.
std::int64_t causal_mask(cudnn_graph::GraphBuilder& graph, const CudnnAttentionShape& shape, std::int64_t score);

// The overrides a matmul over padded sequences needs (-1 when dense).
std::int64_t seq_len_q(const CudnnAttentionShape& shape);
std::int64_t seq_len_kv(const CudnnAttentionShape& shape);

cudnn_graph::Plan build_forward(const CudnnAttentionShape& shape, cudnnHandle_t handle);
cudnn_graph::Plan build_backward(const CudnnAttentionShape& shape, cudnnHandle_t handle);

}  // namespace zt::cuda::cudnn_attention
