// The backward graph, in the order cuDNN's fused flash-attention backward pattern expects:
//   softmax_sum = rowsum(dO ∘ O)                       (a float32 workspace tensor)
//   P  = exp(Q·Kᵀ · scale, masked, − Stats)
//   dV = Pᵀ · dO                                       (summed over each kv head's group)
//   dS = P ∘ (dO·Vᵀ − softmax_sum) · scale
//   dK = dSᵀ · Q                                       (summed over each kv head's group)
//   dQ = dS · K                                        (through a float32 accumulator, or
//                                                       straight when deterministic)
#include "cuda/attention/cudnn/cudnn_attention_graphs.h"

namespace zt::cuda::cudnn_attention {

using cudnn_graph::GraphBuilder;
using cudnn_graph::TensorSpec;

namespace {

TensorSpec workspace_spec(std::vector<std::int64_t> dims) {
  TensorSpec spec;
  spec.dims = dims;
  spec.strides = {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
  spec.type = CUDNN_DATA_FLOAT;
  return spec;
}

// The [batch, heads, seq_kv, seq_q] transposed view of a score-shaped virtual, in `type`.
std::int64_t transposed_scores(GraphBuilder& graph, const CudnnAttentionShape& s, std::int64_t scores,
                               cudnnDataType_t type, const std::string& what) {
  const std::int64_t n = s.max_seqlen;
  std::int64_t out = graph.virtual_tensor({s.batch, s.num_heads, n, n}, {s.num_heads * n * n, n * n, 1, n}, type, what);
  graph.reshape(scores, out, what);
  return out;
}

// out = left · right for a kv-head gradient: straight into `out` when every query head has
// its own kv head, else per query head and then summed over each group.
void grouped_product(GraphBuilder& graph, const CudnnAttentionShape& s, std::int64_t left, std::int64_t right,
                     std::int64_t out, const std::string& what) {
  if (s.num_heads == s.num_kv_heads) {
    graph.matmul(left, right, out, seq_len_kv(s), -1, seq_len_q(s), what);
    return;
  }
  const std::int64_t n = s.max_seqlen, d = s.head_dim;
  std::int64_t per_head = graph.virtual_tensor({s.batch, s.num_heads, n, d}, {s.num_heads * n * d, n * d, d, 1},
                                               io_type(s.dtype), what + " per query head");
  graph.matmul(left, right, per_head, seq_len_kv(s), -1, seq_len_q(s), what + " per query head");
  graph.reduction(CUDNN_REDUCE_TENSOR_ADD, per_head, out, what + " summed over the group");
}

// softmax_sum = rowsum(dO ∘ O) · 1, into the kSoftmaxSum workspace.
void softmax_sum(GraphBuilder& graph, const CudnnAttentionShape& s) {
  const std::int64_t h = s.num_heads, n = s.max_seqlen, d = s.head_dim;
  std::int64_t product =
      graph.virtual_tensor({s.batch, h, n, d}, {h * n * d, n * d, h * d, 1}, CUDNN_DATA_FLOAT, "dO ∘ O");
  graph.pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, kGradOut, kO, -1, product, "dO ∘ O");
  std::int64_t sum = graph.virtual_tensor(row_dims(s), row_strides(s), CUDNN_DATA_FLOAT, "rowsum(dO ∘ O)");
  graph.reduction(CUDNN_REDUCE_TENSOR_ADD, product, sum, "rowsum(dO ∘ O)");
  graph.pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, sum, kOne, -1, kSoftmaxSum, "softmax_sum");
}

// P = exp(masked scaled scores − Stats), float32.
std::int64_t probabilities(GraphBuilder& graph, const CudnnAttentionShape& s) {
  const auto dims = score_dims(s), strides = score_strides(s);
  std::int64_t score = graph.virtual_tensor(dims, strides, CUDNN_DATA_FLOAT, "q·kᵀ");
  graph.matmul(kQ, kK, score, seq_len_q(s), seq_len_kv(s), -1, "q·kᵀ");
  score = scaled(graph, s, score, "scaled scores");
  std::int64_t shifted = graph.virtual_tensor(dims, strides, CUDNN_DATA_FLOAT, "scores - stats");
  graph.pointwise(CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, score, kStats, -1, shifted, "scores - stats");
  shifted = padding_mask(graph, s, shifted);
  shifted = causal_mask(graph, s, shifted);
  std::int64_t probs = graph.virtual_tensor(dims, strides, CUDNN_DATA_FLOAT, "probabilities");
  graph.pointwise(CUDNN_POINTWISE_EXP, CUDNN_DATA_FLOAT, shifted, -1, -1, probs, "probabilities");
  return probs;
}

// dS = P ∘ (dO·Vᵀ − softmax_sum) · scale, float32.
std::int64_t score_gradient(GraphBuilder& graph, const CudnnAttentionShape& s, std::int64_t probs) {
  const auto dims = score_dims(s), strides = score_strides(s);
  std::int64_t dp = graph.virtual_tensor(dims, strides, CUDNN_DATA_FLOAT, "dO·vᵀ");
  graph.matmul(kGradOut, kV, dp, seq_len_q(s), seq_len_kv(s), -1, "dO·vᵀ");
  std::int64_t centered = graph.virtual_tensor(dims, strides, CUDNN_DATA_FLOAT, "dP - softmax_sum");
  graph.pointwise(CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, dp, kSoftmaxSum, -1, centered, "dP - softmax_sum");
  std::int64_t weighted = graph.virtual_tensor(dims, strides, CUDNN_DATA_FLOAT, "P ∘ (dP - softmax_sum)");
  graph.pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, centered, probs, -1, weighted, "P ∘ (dP - softmax_sum)");
  return scaled(graph, s, weighted, "dS");
}

}  // namespace

cudnn_graph::Plan build_backward(const CudnnAttentionShape& s, cudnnHandle_t handle) {
  GraphBuilder graph(describe(s) + " backward");
  add_common_inputs(graph, s, true);
  const TensorSpec k_spec = packed_spec(s, s.num_kv_heads, kOffsetsK);
  graph.tensor(kQ, packed_spec(s, s.num_heads, kOffsetsQ), "q");
  graph.tensor(kK, transposed(k_spec), "k (read transposed)");
  graph.tensor(kV, transposed(packed_spec(s, s.num_kv_heads, kOffsetsV)), "v (read transposed)");
  graph.tensor(kO, packed_spec(s, s.num_heads, kOffsetsO), "out");
  graph.tensor(kGradOut, packed_spec(s, s.num_heads, kOffsetsO), "grad_out");
  graph.tensor(kStats, stats_spec(s), "stats");
  graph.tensor(kGradQ, packed_spec(s, s.num_heads, kOffsetsQ), "grad_q");
  graph.tensor(kGradK, k_spec, "grad_k");
  graph.tensor(kGradV, packed_spec(s, s.num_kv_heads, kOffsetsV), "grad_v");
  graph.tensor(kSoftmaxSum, workspace_spec(row_dims(s)), "softmax_sum workspace");

  softmax_sum(graph, s);
  std::int64_t probs = probabilities(graph, s);
  std::int64_t probs_t = transposed_scores(graph, s, probs, io_type(s.dtype), "Pᵀ");
  grouped_product(graph, s, probs_t, kGradOut, kGradV, "dV = Pᵀ·dO");

  std::int64_t ds = score_gradient(graph, s, probs);
  std::int64_t ds_t = transposed_scores(graph, s, ds, io_type(s.dtype), "dSᵀ");
  grouped_product(graph, s, ds_t, kQ, kGradK, "dK = dSᵀ·q");

  TensorSpec k_rows = k_spec;  // k as stored, [batch, kv_heads, seq, head_dim]
  k_rows.type = CUDNN_DATA_FLOAT;
  std::int64_t k = graph.virtual_tensor(k_rows, "k (rows)");
  graph.reshape(kK, k, "k (rows)");
  if (s.deterministic) {
    graph.matmul(ds, k, kGradQ, seq_len_q(s), -1, seq_len_kv(s), "dQ = dS·k");
  } else {
    graph.tensor(kGradQAccum, workspace_spec({s.batch, s.num_heads, s.max_seqlen, s.head_dim}), "dQ accumulator");
    graph.matmul(ds, k, kGradQAccum, seq_len_q(s), -1, seq_len_kv(s), "dQ = dS·k");
    graph.pointwise(CUDNN_POINTWISE_IDENTITY, CUDNN_DATA_FLOAT, kGradQAccum, -1, -1, kGradQ, "dQ to its dtype");
  }
  return graph.build(handle);
}

}  // namespace zt::cuda::cudnn_attention
