// Forward: one block per (16-query tile, head, sequence), streaming the sequence's keys and
// values 32 at a time through shared memory with an online softmax (running max m, running
// sum l, rescaled output), so memory stays O(tile) whatever the sequence length.
#include "cuda/attention/simple/attention.cuh"
#include "cuda/attention/simple/attention_tiles.cuh"

namespace zt::cuda {
namespace {

using namespace attention_detail;

std::size_t forward_shared_bytes(int head_dim) {
  return sizeof(float) * (kBlockRows * head_dim + kStreamRows * (head_dim + 1) + kStreamRows * head_dim);
}

template <typename T, int kChunks>
__global__ void __launch_bounds__(kThreads)
    attention_forward_kernel(AttentionDims dims, AttentionInputs in, T* out, float* lse) {
  const auto [b, h, q0, seq] = query_tile(in.cu_seqlens);
  if (q0 >= seq.len) return;
  const int dim = dims.head_dim, key_pitch = dim + 1, g = kv_head(dims, h);
  const auto [lane, row0] = warp_rows();
  const Operands<T> x(in);

  extern __shared__ float shared[];
  float* q_tile = shared;                            // [kBlockRows][dim]
  float* k_tile = q_tile + kBlockRows * dim;         // [kStreamRows][dim + 1]: lanes read across rows
  float* v_tile = k_tile + kStreamRows * key_pitch;  // [kStreamRows][dim]
  load_tile<T>(q_tile, dim, kBlockRows, min(kBlockRows, seq.len - q0), dim,
               [&](int r) { return token_row(x.q, seq.start + q0 + r, dims.num_heads, h, dim); });

  float m[kRowsPerWarp], l[kRowsPerWarp], o[kRowsPerWarp][kChunks];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.0f;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) o[r][c] = 0.0f;
  }
  // Causal queries of this tile see no own key past its last query.
  const int keys = dims.prefix_len + (dims.causal ? min(seq.len, q0 + kBlockRows) : seq.len);
  for (int k0 = 0; k0 < keys; k0 += kStreamRows) {
    __syncthreads();  // the previous tile is consumed
    const int valid = min(kStreamRows, keys - k0);
    load_keys(k_tile, key_pitch, v_tile, dim, kStreamRows, valid, x, dims, seq, b, k0, g);
    __syncthreads();

    float s[kRowsPerWarp] = {};
    const float* my_key = k_tile + lane * key_pitch;
    for (int c = 0; c < dim; ++c) {
      const float key = my_key[c];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) s[r] += q_tile[(row0 + r) * dim + c] * key;
    }
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const bool seen = visible(dims, seq.len, q0 + row0 + r, k0 + lane);
      const float score = seen ? s[r] * dims.softmax_scale : -INFINITY;
      const float m_new = fmaxf(m[r], warp_max(score));
      if (m_new == -INFINITY) continue;  // warp-uniform: nothing seen yet in this row
      const float rescale = expf(m[r] - m_new);
      const float p = expf(score - m_new);
      l[r] = l[r] * rescale + warp_sum(p);
      m[r] = m_new;
      const float p_stored = round_through<T>(p);
#pragma unroll
      for (int c = 0; c < kChunks; ++c) o[r][c] *= rescale;
      accumulate_rows(o[r], p_stored, v_tile, dim, lane, dim);
    }
  }
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int i = q0 + row0 + r;
    if (i >= seq.len) continue;
    const std::int64_t token = seq.start + i;
    store_lane_columns(token_row(out, token, dims.num_heads, h, dim), o[r], 1.0f / l[r], lane, dim);
    if (lane == 0) lse[token * dims.num_heads + h] = m[r] + logf(l[r]);
  }
}

}  // namespace

void attention_forward(const AttentionDims& dims, const AttentionInputs& inputs, DType dtype, void* out, float* lse,
                       cudaStream_t stream) {
  check_dims(dims);
  if (dims.max_seqlen == 0) return;
  dispatch_attention(dtype, dims.head_dim, [&]<typename T, int kChunks>() {
    launch_tiles(attention_forward_kernel<T, kChunks>, forward_shared_bytes(dims.head_dim), dims.max_seqlen,
                 dims.num_heads, dims.batch, stream, dims, inputs, static_cast<T*>(out), lse);
  });
}

}  // namespace zt::cuda
