// The forward graph: S = Q·Kᵀ · scale, masked; softmax with Stats = max + log(sum exp);
// O = softmax(S) · V. cuDNN fuses the whole graph into one flash-attention kernel.
#include "cuda/attention/cudnn/cudnn_attention_graphs.h"

namespace zt::cuda::cudnn_attention {

using cudnn_graph::GraphBuilder;
using cudnn_graph::TensorSpec;

namespace {

// The softmax of `score` along its last dim, written to a virtual of the io dtype (the
// second matmul's A), with the statistics written to kStats.
std::int64_t softmax_with_stats(GraphBuilder& graph, const CudnnAttentionShape& s, std::int64_t score) {
  const auto dims = score_dims(s), strides = score_strides(s), rows = row_dims(s), row_str = row_strides(s);
  std::int64_t max = graph.virtual_tensor(rows, row_str, CUDNN_DATA_FLOAT, "row max");
  graph.reduction(CUDNN_REDUCE_TENSOR_MAX, score, max, "row max");
  std::int64_t shifted = graph.virtual_tensor(dims, strides, CUDNN_DATA_FLOAT, "scores - max");
  graph.pointwise(CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, score, max, -1, shifted, "scores - max");
  std::int64_t exp = graph.virtual_tensor(dims, strides, CUDNN_DATA_FLOAT, "exp");
  graph.pointwise(CUDNN_POINTWISE_EXP, CUDNN_DATA_FLOAT, shifted, -1, -1, exp, "exp");
  std::int64_t sum = graph.virtual_tensor(rows, row_str, CUDNN_DATA_FLOAT, "row sum");
  graph.reduction(CUDNN_REDUCE_TENSOR_ADD, exp, sum, "row sum");
  std::int64_t log = graph.virtual_tensor(rows, row_str, CUDNN_DATA_FLOAT, "log row sum");
  graph.pointwise(CUDNN_POINTWISE_LOG, CUDNN_DATA_FLOAT, sum, -1, -1, log, "log row sum");
  graph.pointwise(CUDNN_POINTWISE_ADD, CUDNN_DATA_FLOAT, max, log, -1, kStats, "stats = max + log sum");
  std::int64_t probs = graph.virtual_tensor(dims, strides, io_type(s.dtype), "probabilities");
  graph.pointwise(CUDNN_POINTWISE_DIV, CUDNN_DATA_FLOAT, exp, sum, -1, probs, "probabilities");
  return probs;
}

}  // namespace

cudnn_graph::Plan build_forward(const CudnnAttentionShape& s, cudnnHandle_t handle) {
  GraphBuilder graph(describe(s) + " forward");
  add_common_inputs(graph, s, false);
  graph.tensor(kQ, packed_spec(s, s.num_heads, kOffsetsQ), "q");
  graph.tensor(kK, transposed(packed_spec(s, s.num_kv_heads, kOffsetsK)), "k (read transposed)");
  graph.tensor(kV, packed_spec(s, s.num_kv_heads, kOffsetsV), "v");
  graph.tensor(kO, packed_spec(s, s.num_heads, kOffsetsO), "out");
  graph.tensor(kStats, stats_spec(s), "stats");

  std::int64_t score = graph.virtual_tensor(score_dims(s), score_strides(s), CUDNN_DATA_FLOAT, "q·kᵀ");
  graph.matmul(kQ, kK, score, seq_len_q(s), seq_len_kv(s), -1, "q·kᵀ");
  score = scaled(graph, s, score, "scaled scores");
  score = padding_mask(graph, s, score);
  score = causal_mask(graph, s, score);
  std::int64_t probs = softmax_with_stats(graph, s, score);
  graph.matmul(probs, kV, kO, seq_len_q(s), -1, seq_len_kv(s), "probabilities·v");
  return graph.build(handle);
}

}  // namespace zt::cuda::cudnn_attention
