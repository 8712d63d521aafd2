#include <limits>
#include <string>
#include <utility>

#include "cuda/attention/cudnn/cudnn_attention_graphs.h"
#include "runtime/error.h"

namespace zt::cuda::cudnn_attention {

using cudnn_graph::GraphBuilder;
using cudnn_graph::TensorSpec;

std::string describe(const CudnnAttentionShape& s) {
  return std::string("cuDNN attention (") + dtype_name(s.dtype) + ", batch " + std::to_string(s.batch) + ", heads " +
         std::to_string(s.num_heads) + "/" + std::to_string(s.num_kv_heads) + ", head_dim " +
         std::to_string(s.head_dim) + ", " + (s.ragged ? "max seq " : "seq ") + std::to_string(s.max_seqlen) +
         (s.causal ? ", causal" : ", full") + (s.ragged ? ", ragged" : ", dense") + ")";
}

cudnnDataType_t io_type(DType dtype) {
  if (dtype == DType::kBF16) return CUDNN_DATA_BFLOAT16;
  if (dtype == DType::kF16) return CUDNN_DATA_HALF;
  throw Error(std::string("cuDNN attention takes bfloat16 or float16, got ") + dtype_name(dtype) +
              "; cast the inputs or set attn_impl=zerotune");
}

TensorSpec packed_spec(const CudnnAttentionShape& s, std::int64_t heads, std::int64_t offsets_uid) {
  TensorSpec spec;
  spec.type = io_type(s.dtype);
  spec.dims = {s.batch, heads, s.max_seqlen, s.head_dim};
  // A ragged batch's start comes from the offsets; the batch stride is then unused and set to
  // the largest value, as cuDNN's own ragged samples do, so no bounds check trips on it.
  std::int64_t batch_stride = s.ragged ? std::numeric_limits<std::int32_t>::max() : s.max_seqlen * heads * s.head_dim;
  spec.strides = {batch_stride, s.head_dim, heads * s.head_dim, 1};
  if (s.ragged) spec.ragged_offset = offsets_uid;
  return spec;
}

TensorSpec transposed(TensorSpec spec) {
  std::swap(spec.dims[2], spec.dims[3]);
  std::swap(spec.strides[2], spec.strides[3]);
  return spec;
}

TensorSpec stats_spec(const CudnnAttentionShape& s) {
  TensorSpec spec;
  spec.dims = {s.batch, s.num_heads, s.max_seqlen, 1};
  if (s.ragged) {
    spec.strides = {s.num_heads * s.max_seqlen, 1, s.num_heads, 1};
    spec.ragged_offset = kOffsetsStats;
  } else {
    spec.strides = {s.num_heads * s.max_seqlen, s.max_seqlen, 1, 1};
  }
  return spec;
}

namespace {

TensorSpec scalar(cudnnDataType_t type) {
  TensorSpec spec;
  spec.dims = {1, 1, 1, 1};
  spec.strides = {1, 1, 1, 1};
  spec.type = type;
  spec.by_value = true;
  return spec;
}

TensorSpec int32_column(std::int64_t rows) {
  TensorSpec spec;
  spec.dims = {rows, 1, 1, 1};
  spec.strides = {1, 1, 1, 1};
  spec.type = CUDNN_DATA_INT32;
  return spec;
}

}  // namespace

bool uses_mask_value(const CudnnAttentionShape& s) { return s.causal || s.ragged; }

void add_common_inputs(GraphBuilder& graph, const CudnnAttentionShape& s, bool with_one) {
  graph.tensor(kScale, scalar(CUDNN_DATA_FLOAT), "softmax scale");
  if (uses_mask_value(s)) graph.tensor(kNegativeInfinity, scalar(CUDNN_DATA_FLOAT), "-inf");
  if (with_one) graph.tensor(kOne, scalar(CUDNN_DATA_FLOAT), "one");
  if (!s.ragged) return;
  graph.tensor(kSeqLenQ, int32_column(s.batch), "seq_len_q");
  graph.tensor(kSeqLenKv, int32_column(s.batch), "seq_len_kv");
  for (auto [uid, name] :
       {std::pair{kOffsetsQ, "q offsets"}, std::pair{kOffsetsK, "k offsets"}, std::pair{kOffsetsV, "v offsets"},
        std::pair{kOffsetsO, "out offsets"}, std::pair{kOffsetsStats, "stats offsets"}})
    graph.tensor(uid, int32_column(s.batch + 1), name);
}

std::vector<std::int64_t> score_dims(const CudnnAttentionShape& s) {
  return {s.batch, s.num_heads, s.max_seqlen, s.max_seqlen};
}
std::vector<std::int64_t> score_strides(const CudnnAttentionShape& s) {
  return {s.num_heads * s.max_seqlen * s.max_seqlen, s.max_seqlen * s.max_seqlen, s.max_seqlen, 1};
}
std::vector<std::int64_t> row_dims(const CudnnAttentionShape& s) { return {s.batch, s.num_heads, s.max_seqlen, 1}; }
std::vector<std::int64_t> row_strides(const CudnnAttentionShape& s) {
  return {s.num_heads * s.max_seqlen, s.max_seqlen, 1, 1};
}

std::int64_t seq_len_q(const CudnnAttentionShape& s) { return s.ragged ? std::int64_t{kSeqLenQ} : -1; }
std::int64_t seq_len_kv(const CudnnAttentionShape& s) { return s.ragged ? std::int64_t{kSeqLenKv} : -1; }

std::int64_t scaled(GraphBuilder& graph, const CudnnAttentionShape& s, std::int64_t score, const std::string& what) {
  std::int64_t out = graph.virtual_tensor(score_dims(s), score_strides(s), CUDNN_DATA_FLOAT, what);
  graph.pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, score, kScale, -1, out, what);
  return out;
}

namespace {

// Index tensors of the score matrix's rows (axis 2) and columns (axis 3), computed in
// `compute` type, named "<what> row index" and "<what> column index".
std::pair<std::int64_t, std::int64_t> score_indices(GraphBuilder& graph, const CudnnAttentionShape& s,
                                                    std::int64_t score, cudnnDataType_t compute,
                                                    const std::string& what) {
  const auto dims = score_dims(s), strides = score_strides(s);
  std::int64_t row = graph.virtual_tensor(dims, strides, CUDNN_DATA_INT32, what + " row index");
  std::int64_t col = graph.virtual_tensor(dims, strides, CUDNN_DATA_INT32, what + " column index");
  graph.pointwise(CUDNN_POINTWISE_GEN_INDEX, compute, score, -1, -1, row, what + " row index", 2);
  graph.pointwise(CUDNN_POINTWISE_GEN_INDEX, compute, score, -1, -1, col, what + " column index", 3);
  return {row, col};
}

// A boolean tensor of the score matrix's shape, `name`d.
std::int64_t score_mask(GraphBuilder& graph, const CudnnAttentionShape& s, const std::string& name) {
  return graph.virtual_tensor(score_dims(s), score_strides(s), CUDNN_DATA_BOOLEAN, name);
}

// The scores where `keep`, -inf elsewhere.
std::int64_t select_kept(GraphBuilder& graph, const CudnnAttentionShape& s, std::int64_t score, std::int64_t keep,
                         const std::string& what) {
  std::int64_t out = graph.virtual_tensor(score_dims(s), score_strides(s), CUDNN_DATA_FLOAT, what + "-masked scores");
  graph.pointwise(CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, score, kNegativeInfinity, keep, out,
                  what + " select");
  return out;
}

}  // namespace

std::int64_t padding_mask(GraphBuilder& graph, const CudnnAttentionShape& s, std::int64_t score) {
  if (!s.ragged) return score;
  const auto [row, col] = score_indices(graph, s, score, CUDNN_DATA_INT32, "padding");
  std::int64_t row_in = score_mask(graph, s, "row < seq_len_q");
  std::int64_t col_in = score_mask(graph, s, "column < seq_len_kv");
  graph.pointwise(CUDNN_POINTWISE_CMP_LT, CUDNN_DATA_BOOLEAN, row, kSeqLenQ, -1, row_in, "row < seq_len_q");
  graph.pointwise(CUDNN_POINTWISE_CMP_LT, CUDNN_DATA_BOOLEAN, col, kSeqLenKv, -1, col_in, "column < seq_len_kv");
  std::int64_t keep = score_mask(graph, s, "padding mask");
  graph.pointwise(CUDNN_POINTWISE_LOGICAL_AND, CUDNN_DATA_BOOLEAN, row_in, col_in, -1, keep, "padding mask");
  return select_kept(graph, s, score, keep, "padding");
}

std::int64_t causal_mask(GraphBuilder& graph, const CudnnAttentionShape& s, std::int64_t score) {
  if (!s.causal) return score;
  const auto [row, col] = score_indices(graph, s, score, CUDNN_DATA_FLOAT, "causal");
  std::int64_t keep = score_mask(graph, s, "row >= column");
  graph.pointwise(CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, row, col, -1, keep, "row >= column");
  return select_kept(graph, s, score, keep, "causal");
}

}  // namespace zt::cuda::cudnn_attention
