// Backward in three kernels, none with atomics:
//   delta[t, h] = rowsum(dO ∘ O)                      one warp per (token, head)
//   dQ          one block per (16-query tile, head, sequence), streaming keys/values
//   dK, dV      one block per (16-key tile, kv head, sequence), streaming the queries of
//               every head of the group; prefix keys are keys of that sequence like any other
// Both gradient kernels recompute P = exp(scale · q·k − lse) and dS = P ∘ (dP − delta).
#include "cuda/attention/simple/attention.cuh"
#include "cuda/attention/simple/attention_tiles.cuh"

namespace zt::cuda {
namespace {

using namespace attention_detail;

template <typename T>
__global__ void __launch_bounds__(kThreads)
    attention_delta_kernel(const T* out, const T* grad_out, float* delta, std::int64_t rows, int dim) {
  const int lane = threadIdx.x % kLanes;
  for (std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kWarps + threadIdx.x / kLanes; row < rows;
       row += static_cast<std::int64_t>(gridDim.x) * kWarps) {
    float sum = 0.0f;
    for (int c = lane; c < dim; c += kLanes)
      sum += load_float(out + row * dim + c) * load_float(grad_out + row * dim + c);
    sum = warp_sum(sum);
    if (lane == 0) delta[row] = sum;
  }
}

std::size_t query_grad_shared_bytes(int head_dim) {
  return sizeof(float) * (2 * kBlockRows * head_dim + 2 * kStreamRows * (head_dim + 1));
}

template <typename T, int kChunks>
__global__ void __launch_bounds__(kThreads)
    attention_query_grad_kernel(AttentionDims dims, AttentionInputs in, const T* grad_out, const float* lse,
                                const float* delta, T* grad_q) {
  const auto [b, h, q0, seq] = query_tile(in.cu_seqlens);
  if (q0 >= seq.len) return;
  const int dim = dims.head_dim, pitch = dim + 1, g = kv_head(dims, h);
  const auto [lane, row0] = warp_rows();
  const Operands<T> x(in);

  extern __shared__ float shared[];
  float* q_tile = shared;                        // [kBlockRows][dim]
  float* dout_tile = q_tile + kBlockRows * dim;  // [kBlockRows][dim]
  float* k_tile = dout_tile + kBlockRows * dim;  // [kStreamRows][dim + 1]
  float* v_tile = k_tile + kStreamRows * pitch;  // [kStreamRows][dim + 1]
  const int own_rows = min(kBlockRows, seq.len - q0);
  load_tile<T>(q_tile, dim, kBlockRows, own_rows, dim,
               [&](int r) { return token_row(x.q, seq.start + q0 + r, dims.num_heads, h, dim); });
  load_tile<T>(dout_tile, dim, kBlockRows, own_rows, dim,
               [&](int r) { return token_row(grad_out, seq.start + q0 + r, dims.num_heads, h, dim); });

  float row_lse[kRowsPerWarp], row_delta[kRowsPerWarp], acc[kRowsPerWarp][kChunks];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const bool valid = q0 + row0 + r < seq.len;
    const std::int64_t index = (seq.start + q0 + row0 + r) * dims.num_heads + h;
    row_lse[r] = valid ? lse[index] : 0.0f;
    row_delta[r] = valid ? delta[index] : 0.0f;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) acc[r][c] = 0.0f;
  }
  const int keys = dims.prefix_len + (dims.causal ? min(seq.len, q0 + kBlockRows) : seq.len);
  for (int k0 = 0; k0 < keys; k0 += kStreamRows) {
    __syncthreads();
    const int valid = min(kStreamRows, keys - k0);
    load_keys(k_tile, pitch, v_tile, pitch, kStreamRows, valid, x, dims, seq, b, k0, g);
    __syncthreads();

    float s[kRowsPerWarp] = {}, dp[kRowsPerWarp] = {};
    const float *my_key = k_tile + lane * pitch, *my_value = v_tile + lane * pitch;
    for (int c = 0; c < dim; ++c) {
      const float key = my_key[c], value = my_value[c];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        s[r] += q_tile[(row0 + r) * dim + c] * key;
        dp[r] += dout_tile[(row0 + r) * dim + c] * value;
      }
    }
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const bool seen = visible(dims, seq.len, q0 + row0 + r, k0 + lane);
      const float p = seen ? expf(s[r] * dims.softmax_scale - row_lse[r]) : 0.0f;
      const float ds = p * (dp[r] - row_delta[r]);
      accumulate_rows(acc[r], ds, k_tile, pitch, lane, dim);
    }
  }
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    if (q0 + row0 + r >= seq.len) continue;
    store_lane_columns(token_row(grad_q, seq.start + q0 + row0 + r, dims.num_heads, h, dim), acc[r], dims.softmax_scale,
                       lane, dim);
  }
}

std::size_t key_value_grad_shared_bytes(int head_dim) {
  return sizeof(float) * (2 * kBlockRows * head_dim + 2 * kStreamRows * (head_dim + 1) + 2 * kStreamRows);
}

template <typename T, int kChunks>
__global__ void __launch_bounds__(kThreads)
    attention_key_value_grad_kernel(AttentionDims dims, AttentionInputs in, const T* grad_out, const float* lse,
                                    const float* delta, AttentionGradOutputs grads) {
  const int b = blockIdx.z, g = blockIdx.y, k0 = blockIdx.x * kBlockRows;
  const Sequence seq = sequence(in.cu_seqlens, b);
  const int keys = dims.prefix_len + seq.len;
  if (k0 >= keys) return;
  const int dim = dims.head_dim, pitch = dim + 1, group = dims.num_heads / dims.num_kv_heads;
  const auto [lane, row0] = warp_rows();
  const Operands<T> x(in);

  extern __shared__ float shared[];
  float* k_tile = shared;                             // [kBlockRows][dim]
  float* v_tile = k_tile + kBlockRows * dim;          // [kBlockRows][dim]
  float* q_tile = v_tile + kBlockRows * dim;          // [kStreamRows][dim + 1]
  float* dout_tile = q_tile + kStreamRows * pitch;    // [kStreamRows][dim + 1]
  float* lse_tile = dout_tile + kStreamRows * pitch;  // [kStreamRows]
  float* delta_tile = lse_tile + kStreamRows;         // [kStreamRows]
  const int own_rows = min(kBlockRows, keys - k0);
  load_keys(k_tile, dim, v_tile, dim, kBlockRows, own_rows, x, dims, seq, b, k0, g);

  float dk[kRowsPerWarp][kChunks] = {}, dv[kRowsPerWarp][kChunks] = {};
  // Causal queries before this tile's first own key see none of its keys.
  const int first_query = dims.causal ? max(0, k0 - dims.prefix_len) : 0;
  for (int h = g * group; h < (g + 1) * group; ++h)
    for (int i0 = first_query; i0 < seq.len; i0 += kStreamRows) {
      __syncthreads();
      const int valid = min(kStreamRows, seq.len - i0);
      load_tile<T>(q_tile, pitch, kStreamRows, valid, dim,
                   [&](int r) { return token_row(x.q, seq.start + i0 + r, dims.num_heads, h, dim); });
      load_tile<T>(dout_tile, pitch, kStreamRows, valid, dim,
                   [&](int r) { return token_row(grad_out, seq.start + i0 + r, dims.num_heads, h, dim); });
      if (threadIdx.x < kStreamRows) {
        const std::int64_t index = (seq.start + i0 + threadIdx.x) * dims.num_heads + h;
        lse_tile[threadIdx.x] = static_cast<int>(threadIdx.x) < valid ? lse[index] : 0.0f;
        delta_tile[threadIdx.x] = static_cast<int>(threadIdx.x) < valid ? delta[index] : 0.0f;
      }
      __syncthreads();

      float s[kRowsPerWarp] = {}, dp[kRowsPerWarp] = {};
      const float *my_query = q_tile + lane * pitch, *my_dout = dout_tile + lane * pitch;
      for (int c = 0; c < dim; ++c) {
        const float query = my_query[c], dout = my_dout[c];
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r) {
          s[r] += query * k_tile[(row0 + r) * dim + c];
          dp[r] += dout * v_tile[(row0 + r) * dim + c];
        }
      }
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const bool seen = visible(dims, seq.len, i0 + lane, k0 + row0 + r);
        const float p = seen ? expf(s[r] * dims.softmax_scale - lse_tile[lane]) : 0.0f;
        const float ds = p * (dp[r] - delta_tile[lane]);
        for (int j = 0; j < kStreamRows; ++j) {
          const float p_j = __shfl_sync(kFullMask, p, j), ds_j = __shfl_sync(kFullMask, ds, j);
          const float *query = q_tile + j * pitch, *dout = dout_tile + j * pitch;
#pragma unroll
          for (int c = 0; c < kChunks; ++c)
            if (c * kLanes + lane < dim) {
              dv[r][c] += p_j * dout[c * kLanes + lane];
              dk[r][c] += ds_j * query[c * kLanes + lane];
            }
        }
      }
    }
  T *grad_k = static_cast<T*>(grads.grad_k), *grad_v = static_cast<T*>(grads.grad_v);
  T *grad_prefix_k = static_cast<T*>(grads.grad_prefix_k), *grad_prefix_v = static_cast<T*>(grads.grad_prefix_v);
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int j = k0 + row0 + r;
    if (j >= keys) continue;
    T* dk_row = key_row(grad_k, grad_prefix_k, dims, seq, b, j, g);
    T* dv_row = key_row(grad_v, grad_prefix_v, dims, seq, b, j, g);
#pragma unroll
    for (int c = 0; c < kChunks; ++c)
      if (c * kLanes + lane < dim) {
        store_float(dk_row + c * kLanes + lane, dk[r][c] * dims.softmax_scale);
        store_float(dv_row + c * kLanes + lane, dv[r][c]);
      }
  }
}

template <typename T>
void launch_delta(const AttentionDims& dims, const void* out, const void* grad_out, float* delta, cudaStream_t stream) {
  const std::int64_t rows = dims.total_tokens * dims.num_heads;
  if (rows == 0) return;
  attention_delta_kernel<T><<<grid_size(rows, kWarps), kThreads, 0, stream>>>(
      static_cast<const T*>(out), static_cast<const T*>(grad_out), delta, rows, dims.head_dim);
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void attention_backward(const AttentionDims& dims, const AttentionInputs& inputs, DType dtype, const void* out,
                        const void* grad_out, const float* lse, float* delta, const AttentionGradOutputs& grads,
                        cudaStream_t stream) {
  check_dims(dims);
  dispatch_attention(dtype, dims.head_dim, [&]<typename T, int kChunks>() {
    launch_delta<T>(dims, out, grad_out, delta, stream);
    const T* dout = static_cast<const T*>(grad_out);
    if (dims.max_seqlen > 0)
      launch_tiles(attention_query_grad_kernel<T, kChunks>, query_grad_shared_bytes(dims.head_dim), dims.max_seqlen,
                   dims.num_heads, dims.batch, stream, dims, inputs, dout, lse, delta, static_cast<T*>(grads.grad_q));
    const std::int64_t keys = static_cast<std::int64_t>(dims.prefix_len) + dims.max_seqlen;
    if (keys > 0)
      launch_tiles(attention_key_value_grad_kernel<T, kChunks>, key_value_grad_shared_bytes(dims.head_dim), keys,
                   dims.num_kv_heads, dims.batch, stream, dims, inputs, dout, lse, delta, grads);
  });
}

}  // namespace zt::cuda
