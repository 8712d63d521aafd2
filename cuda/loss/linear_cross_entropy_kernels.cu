#include "cuda/loss/linear_cross_entropy_kernels.cuh"

#include <cmath>
#include <string>

#include "cuda/common/cuda_common.cuh"
#include "cuda/common/shuffle_reduce.cuh"
#include "cuda/common/vector_io.cuh"
#include "cuda/elementwise/elementwise_dispatch.cuh"
#include "runtime/check.h"
#include "runtime/error.h"

namespace zt::cuda {
namespace {

// A (source, destination) pair of float types where the destination is the source or
// narrower than a float32 source: the only conversions the fused loss makes.
template <typename F>
void dispatch_pair(DType from, DType to, const char* what, F&& f) {
  ZT_REQUIRE(from == to || from == DType::kF32, std::string(what) + ": cannot convert " + dtype_name(from) + " to " +
                                                    dtype_name(to) + "; the source must be float32 or the same dtype");
  dispatch_float_type(from, what, [&]<typename S>() {
    dispatch_float_type(to, what, [&]<typename D>() {
      if constexpr (std::is_same_v<S, D> || std::is_same_v<S, float>) f.template operator()<S, D>();
    });
  });
}

// Running log-sum-exp of a stream of values: their max and the sum of exp(x - max).
struct Lse {
  float max;
  float sum;
};

// The log-sum-exp of the values of two streams, for block_reduce.
struct MergeLse {
  __device__ Lse operator()(Lse a, Lse b) const {
    float m = fmaxf(a.max, b.max);
    if (m == -INFINITY) return {m, 0.0f};  // both empty: exp(-inf - -inf) would be NaN
    return {m, a.sum * expf(a.max - m) + b.sum * expf(b.max - m)};
  }
};

__device__ __forceinline__ Lse shfl_xor(Lse value, int offset) {
  return {zt::cuda::shfl_xor(value.max, offset), zt::cuda::shfl_xor(value.sum, offset)};
}

// Elements j0 .. j0 + N of a row as floats; past the row's end, `fill`.
template <typename L, int N>
__device__ __forceinline__ void load_pack(const L* row, std::int64_t j0, std::int64_t vocab, float fill,
                                          float (&v)[N]) {
  if (j0 + N <= vocab) return load_vector<L, N>(row + j0, v);
#pragma unroll
  for (int i = 0; i < N; ++i) v[i] = j0 + i < vocab ? load_float(row + j0 + i) : fill;
}

template <typename G, int N>
__device__ __forceinline__ void store_pack(G* row, std::int64_t j0, std::int64_t vocab, const float (&v)[N]) {
  if (j0 + N <= vocab) return store_vector<G, N>(row + j0, v);
#pragma unroll
  for (int i = 0; i < N; ++i)
    if (j0 + i < vocab) store_float(row + j0 + i, v[i]);
}

// One block per row. Pass 1 reads the row once for its log-sum-exp (online: max and
// rescaled sum together); pass 2 reads it again and writes the gradient over it. A narrower
// gradient type overwrites the first half (or quarter) of the row's bytes, so in each tile
// every thread loads before any thread stores: a store to element j lands on the bytes of
// element j·sizeof(G)/sizeof(L) <= j, which this tile or an earlier one has already read.
template <typename L, typename G, typename Label>
__global__ void __launch_bounds__(1024)
    chunk_loss_kernel(L* logits, std::int64_t ld, const Label* labels, std::int64_t vocab, std::int64_t ignore_index,
                      bool mean, float grad_scale, const std::int64_t* valid_count, float* token_loss, bool write_grad,
                      const float* token_weights) {
  constexpr int N = kVectorWidth<L>;
  const std::int64_t row_index = blockIdx.x;
  const L* row = logits + row_index * ld;
  G* grad = reinterpret_cast<G*>(logits + row_index * ld);
  const std::int64_t step = static_cast<std::int64_t>(blockDim.x) * N;
  const auto label = static_cast<std::int64_t>(labels[row_index]);
  float v[N];
  if (label == ignore_index) {
    if (threadIdx.x == 0) token_loss[row_index] = 0.0f;
    if (!write_grad) return;
    float zeros[N] = {};
    for (std::int64_t j0 = threadIdx.x * N; j0 < vocab; j0 += step) store_pack<G, N>(grad, j0, vocab, zeros);
    return;
  }
  Lse acc{-INFINITY, 0.0f};
  float label_logit = 0.0f;
  bool owns_label = false;
  for (std::int64_t j0 = threadIdx.x * N; j0 < vocab; j0 += step) {
    load_pack<L, N>(row, j0, vocab, -INFINITY, v);
    float m = acc.max;
#pragma unroll
    for (int i = 0; i < N; ++i) m = fmaxf(m, v[i]);
    float sum = m == -INFINITY ? 0.0f : acc.sum * expf(acc.max - m);
#pragma unroll
    for (int i = 0; i < N; ++i) sum += expf(v[i] - m);
    acc = {m, sum};
    if (label >= j0 && label < j0 + N) {
      owns_label = true;
      label_logit = v[label - j0];
    }
  }
  acc = block_reduce(acc, Lse{-INFINITY, 0.0f}, MergeLse{});
  const float lse = acc.max + logf(acc.sum);
  const float weight = token_weights != nullptr ? token_weights[row_index] : 1.0f;
  if (owns_label) token_loss[row_index] = (lse - label_logit) * weight;
  if (!write_grad) return;
  float scale = mean ? grad_scale / static_cast<float>(*valid_count) : grad_scale;  // a label is valid here
  scale *= weight;
  for (std::int64_t base = 0; base < vocab; base += step) {
    const std::int64_t j0 = base + threadIdx.x * N;
    load_pack<L, N>(row, j0, vocab, 0.0f, v);
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = (expf(v[i] - lse) - (j0 + i == label ? 1.0f : 0.0f)) * scale;
    if constexpr (sizeof(G) < sizeof(L)) __syncthreads();
    store_pack<G, N>(grad, j0, vocab, v);
  }
}

template <typename Label>
__global__ void count_valid_kernel(const Label* labels, std::int64_t tokens, std::int64_t ignore_index,
                                   std::int64_t* valid_count) {
  long long count = 0;
  for (std::int64_t t = threadIdx.x; t < tokens; t += blockDim.x)
    count += static_cast<std::int64_t>(labels[t]) != ignore_index;
  count = block_reduce(count, 0ll, SumOp{});
  if (threadIdx.x == 0) *valid_count = count;
}

__global__ void reduce_loss_kernel(const float* token_loss, std::int64_t tokens, bool mean,
                                   const std::int64_t* valid_count, float* loss) {
  float sum = 0.0f;
  for (std::int64_t t = threadIdx.x; t < tokens; t += blockDim.x) sum += token_loss[t];
  sum = block_reduce(sum, 0.0f, SumOp{});
  if (threadIdx.x != 0) return;
  // All tokens ignored: loss 0, as cross_entropy gives, so padding alone adds nothing.
  std::int64_t count = *valid_count;
  *loss = mean ? (count > 0 ? sum / static_cast<float>(count) : 0.0f) : sum;
}

template <typename S, typename D>
__global__ void scale_kernel(const S* src, D* dst, std::int64_t n, const float* grad_loss, float factor,
                             bool accumulate) {
  const float scale = *grad_loss * factor;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float value = load_float(src + i) * scale;
    store_float(dst + i, accumulate ? load_float(dst + i) + value : value);
  }
}

int threads_for_row(std::int64_t vocab, int pack) {
  std::int64_t packs = (vocab + pack - 1) / pack;
  if (packs >= 1024) return 1024;
  return packs <= 32 ? 32 : static_cast<int>((packs + 31) / 32 * 32);
}

}  // namespace

void chunk_loss_and_grad(const ChunkLossArgs& a, cudaStream_t stream) {
  const char* what = "linear_cross_entropy chunk kernel";
  if (a.rows == 0) return;
  ZT_REQUIRE(a.vocab >= 1 && a.ld_logits >= a.vocab && a.ld_logits % 8 == 0,
             std::string(what) + ": vocab " + std::to_string(a.vocab) + " and leading dimension " +
                 std::to_string(a.ld_logits) + " must satisfy 1 <= vocab <= ld, ld a multiple of 8");
  ZT_REQUIRE(reinterpret_cast<std::uintptr_t>(a.logits) % 16 == 0,
             std::string(what) + ": the logits buffer must be 16-byte aligned");
  ZT_REQUIRE(a.rows <= 0x7fffffff, std::string(what) + ": a chunk has more than 2^31 - 1 rows");
  dispatch_pair(a.logits_dtype, a.grad_dtype, what, [&]<typename L, typename G>() {
    dispatch_index_type(a.label_dtype, std::string(what) + ": labels", [&]<typename Label>() {
      chunk_loss_kernel<L, G, Label>
          <<<static_cast<unsigned>(a.rows), threads_for_row(a.vocab, kVectorWidth<L>), 0, stream>>>(
              static_cast<L*>(a.logits), a.ld_logits, static_cast<const Label*>(a.labels), a.vocab, a.ignore_index,
              a.mean, a.grad_scale, a.valid_count, a.token_loss, a.write_grad, a.token_weights);
    });
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

void count_valid_labels(const void* labels, DType label_dtype, std::int64_t tokens, std::int64_t ignore_index,
                        std::int64_t* valid_count, cudaStream_t stream) {
  dispatch_index_type(label_dtype, "linear_cross_entropy: labels", [&]<typename Label>() {
    count_valid_kernel<<<1, 1024, 0, stream>>>(static_cast<const Label*>(labels), tokens, ignore_index, valid_count);
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

void reduce_token_loss(const float* token_loss, std::int64_t tokens, bool mean, const std::int64_t* valid_count,
                       float* loss, cudaStream_t stream) {
  reduce_loss_kernel<<<1, 1024, 0, stream>>>(token_loss, tokens, mean, valid_count, loss);
  ZT_CUDA_CHECK(cudaGetLastError());
}

void scale_gradient(const void* src, DType src_dtype, void* dst, DType dst_dtype, std::int64_t n,
                    const float* grad_loss, float factor, bool accumulate, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_pair(src_dtype, dst_dtype, "linear_cross_entropy_backward", [&]<typename S, typename D>() {
    scale_kernel<<<grid_size(n, 256), 256, 0, stream>>>(static_cast<const S*>(src), static_cast<D*>(dst), n, grad_loss,
                                                        factor, accumulate);
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda
