#include "cuda/embedding/embedding.cuh"

#include <cub/device/device_radix_sort.cuh>

#include <bit>
#include <limits>
#include <string>

#include "cuda/common/cuda_common.cuh"
#include "cuda/common/scratch_buffer.h"
#include "cuda/elementwise/elementwise_dispatch.cuh"
#include "runtime/check.h"
#include "runtime/error.h"

namespace zt::cuda {
namespace {

// One block per row (grid-striding over rows), threads across the hidden dim: row reads and
// writes are contiguous and coalesced.
int threads_for(std::int64_t hidden) { return hidden >= 256 ? 256 : static_cast<int>((hidden + 31) / 32 * 32); }

template <typename T, typename Id>
__global__ void gather_rows_kernel(const T* weight, const Id* ids, T* out, std::int64_t tokens, std::int64_t hidden) {
  for (std::int64_t t = blockIdx.x; t < tokens; t += gridDim.x) {
    const T* src = weight + static_cast<std::int64_t>(ids[t]) * hidden;
    T* dst = out + t * hidden;
    for (std::int64_t h = threadIdx.x; h < hidden; h += blockDim.x) dst[h] = src[h];
  }
}

template <typename T, typename Id>
__global__ void scatter_add_kernel(const T* grad, const Id* ids, float* accumulator, std::int64_t tokens,
                                   std::int64_t hidden) {
  for (std::int64_t t = blockIdx.x; t < tokens; t += gridDim.x) {
    float* dst = accumulator + static_cast<std::int64_t>(ids[t]) * hidden;
    const T* src = grad + t * hidden;
    for (std::int64_t h = threadIdx.x; h < hidden; h += blockDim.x) atomicAdd(dst + h, load_float(src + h));
  }
}

__global__ void iota_kernel(std::int32_t* out, std::int64_t count) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    out[i] = static_cast<std::int32_t>(i);
}

template <typename Id>
__device__ std::int64_t lower_bound(const Id* sorted, std::int64_t count, std::int64_t value) {
  std::int64_t lo = 0, hi = count;
  while (lo < hi) {
    std::int64_t mid = lo + (hi - lo) / 2;
    if (static_cast<std::int64_t>(sorted[mid]) < value)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// Row v sums the grad rows of its run [lo, hi) of the sorted ids, in token order, and writes
// the sum (every row) or, with `accumulate`, adds it to the row (only rows whose id occurs).
template <typename T, typename Id, typename D>
__global__ void sum_sorted_runs_kernel(const T* grad, const Id* sorted_ids, const std::int32_t* sorted_tokens,
                                       D* dweight, std::int64_t tokens, std::int64_t vocab, std::int64_t hidden,
                                       bool accumulate) {
  for (std::int64_t v = blockIdx.x; v < vocab; v += gridDim.x) {
    std::int64_t lo = lower_bound(sorted_ids, tokens, v), hi = lower_bound(sorted_ids, tokens, v + 1);
    if (accumulate && lo == hi) continue;
    for (std::int64_t h = threadIdx.x; h < hidden; h += blockDim.x) {
      float sum = 0.0f;
      for (std::int64_t s = lo; s < hi; ++s)
        sum += load_float(grad + static_cast<std::int64_t>(sorted_tokens[s]) * hidden + h);
      D* out = dweight + v * hidden + h;
      store_float(out, accumulate ? load_float(out) + sum : sum);
    }
  }
}

// (id, token) pairs sorted by id; CUB's radix sort is stable, so tokens of one id stay in
// increasing order. Only the bits an id below `vocab` can have take part.
template <typename Id>
void sort_by_id(const Id* ids, Id* sorted_ids, std::int32_t* sorted_tokens, std::int64_t tokens, std::int64_t vocab,
                cudaStream_t stream) {
  ScratchBuffer token_order(static_cast<std::size_t>(tokens) * sizeof(std::int32_t), stream);
  iota_kernel<<<grid_size(tokens, 256), 256, 0, stream>>>(token_order.as<std::int32_t>(), tokens);
  ZT_CUDA_CHECK(cudaGetLastError());
  int end_bit = std::bit_width(static_cast<std::uint64_t>(vocab - 1));
  if (end_bit == 0) end_bit = 1;
  auto count = static_cast<int>(tokens);
  std::size_t temp_bytes = 0;
  ZT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, ids, sorted_ids, token_order.as<std::int32_t>(),
                                                sorted_tokens, count, 0, end_bit, stream));
  ScratchBuffer temp(temp_bytes, stream);
  ZT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data(), temp_bytes, ids, sorted_ids,
                                                token_order.as<std::int32_t>(), sorted_tokens, count, 0, end_bit,
                                                stream));
}

// The sorted runs of ids summed into `dweight` (of type D) as sum_sorted_runs_kernel says.
template <typename T, typename Id, typename D>
void sum_by_id(const T* grad, const Id* ids, D* dweight, std::int64_t tokens, std::int64_t vocab, std::int64_t hidden,
               bool accumulate, cudaStream_t stream) {
  ZT_REQUIRE(tokens <= std::numeric_limits<std::int32_t>::max(),
             "embedding backward: " + std::to_string(tokens) + " tokens is more than the 2^31 the sort supports");
  ScratchBuffer sorted_ids(static_cast<std::size_t>(tokens) * sizeof(Id), stream);
  ScratchBuffer sorted_tokens(static_cast<std::size_t>(tokens) * sizeof(std::int32_t), stream);
  if (tokens > 0) sort_by_id(ids, sorted_ids.as<Id>(), sorted_tokens.as<std::int32_t>(), tokens, vocab, stream);
  sum_sorted_runs_kernel<<<grid_size(vocab, 1), threads_for(hidden), 0, stream>>>(
      grad, sorted_ids.as<Id>(), sorted_tokens.as<std::int32_t>(), dweight, tokens, vocab, hidden, accumulate);
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void embedding_forward(const void* weight, const void* ids, DType id_dtype, void* out, DType dtype, std::int64_t tokens,
                       std::int64_t hidden, cudaStream_t stream) {
  if (tokens == 0 || hidden == 0) return;
  dispatch_float_and_index_types(dtype, id_dtype, "embedding", "ids", [&]<typename T, typename Id>() {
    gather_rows_kernel<<<grid_size(tokens, 1), threads_for(hidden), 0, stream>>>(
        static_cast<const T*>(weight), static_cast<const Id*>(ids), static_cast<T*>(out), tokens, hidden);
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

void embedding_backward_atomic(const void* grad, DType dtype, const void* ids, DType id_dtype, float* accumulator,
                               std::int64_t tokens, std::int64_t hidden, cudaStream_t stream) {
  if (tokens == 0 || hidden == 0) return;
  dispatch_float_and_index_types(dtype, id_dtype, "embedding", "ids", [&]<typename T, typename Id>() {
    scatter_add_kernel<<<grid_size(tokens, 1), threads_for(hidden), 0, stream>>>(
        static_cast<const T*>(grad), static_cast<const Id*>(ids), accumulator, tokens, hidden);
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

void embedding_backward_deterministic(const void* grad, DType dtype, const void* ids, DType id_dtype, void* dweight,
                                      std::int64_t tokens, std::int64_t vocab, std::int64_t hidden,
                                      cudaStream_t stream) {
  if (vocab == 0 || hidden == 0) return;
  dispatch_float_and_index_types(dtype, id_dtype, "embedding", "ids", [&]<typename T, typename Id>() {
    sum_by_id(static_cast<const T*>(grad), static_cast<const Id*>(ids), static_cast<T*>(dweight), tokens, vocab, hidden,
              /*accumulate=*/false, stream);
  });
}

void embedding_backward_deterministic_add(const void* grad, DType dtype, const void* ids, DType id_dtype, float* sink,
                                          std::int64_t tokens, std::int64_t vocab, std::int64_t hidden,
                                          cudaStream_t stream) {
  if (vocab == 0 || hidden == 0 || tokens == 0) return;
  dispatch_float_and_index_types(dtype, id_dtype, "embedding", "ids", [&]<typename T, typename Id>() {
    sum_by_id(static_cast<const T*>(grad), static_cast<const Id*>(ids), sink, tokens, vocab, hidden,
              /*accumulate=*/true, stream);
  });
}

}  // namespace zt::cuda
