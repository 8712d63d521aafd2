#include "cuda/loss/cross_entropy.cuh"

#include <cmath>
#include <string>

#include "cuda/common/cuda_common.cuh"
#include "cuda/common/scratch_buffer.h"
#include "cuda/common/shuffle_reduce.cuh"
#include "cuda/elementwise/elementwise_dispatch.cuh"
#include "runtime/check.h"
#include "runtime/error.h"

namespace zt::cuda {
namespace {

// Two passes over the row (max, then sum of exponentials): simple and exact for any vocab.
template <typename T, typename Label>
__global__ void token_loss_kernel(const T* logits, const Label* labels, std::int64_t tokens, std::int64_t vocab,
                                  std::int64_t ignore_index, float* logsumexp, float* token_loss) {
  for (std::int64_t t = blockIdx.x; t < tokens; t += gridDim.x) {
    const T* row = logits + t * vocab;
    float max = -INFINITY;
    for (std::int64_t j = threadIdx.x; j < vocab; j += blockDim.x) max = fmaxf(max, load_float(row + j));
    max = block_reduce(max, -INFINITY, MaxOp{});
    float sum = 0.0f;
    for (std::int64_t j = threadIdx.x; j < vocab; j += blockDim.x) sum += expf(load_float(row + j) - max);
    sum = block_reduce(sum, 0.0f, SumOp{});
    if (threadIdx.x == 0) {
      float lse = max + logf(sum);
      auto label = static_cast<std::int64_t>(labels[t]);
      logsumexp[t] = lse;
      token_loss[t] = label == ignore_index ? 0.0f : lse - load_float(row + label);
    }
  }
}

// One block adds the token losses in a fixed order, so the loss has the same bits every run.
template <typename Label>
__global__ void reduce_loss_kernel(const float* token_loss, const Label* labels, std::int64_t tokens,
                                   std::int64_t ignore_index, bool mean, float* loss, std::int64_t* valid_count) {
  float sum = 0.0f;
  long long count = 0;
  for (std::int64_t t = threadIdx.x; t < tokens; t += blockDim.x) {
    sum += token_loss[t];
    count += static_cast<std::int64_t>(labels[t]) != ignore_index;
  }
  sum = block_reduce(sum, 0.0f, SumOp{});
  count = block_reduce(count, 0ll, SumOp{});
  if (threadIdx.x == 0) {
    // All tokens ignored: loss 0, not torch's 0/0 = NaN, so a micro-batch of padding alone
    // adds nothing instead of poisoning the step.
    *loss = mean ? (count > 0 ? sum / static_cast<float>(count) : 0.0f) : sum;
    *valid_count = count;
  }
}

template <typename T, typename Label>
__global__ void cross_entropy_backward_kernel(const T* logits, const Label* labels, std::int64_t tokens,
                                              std::int64_t vocab, std::int64_t ignore_index, bool mean,
                                              const float* grad_loss, const float* logsumexp,
                                              const std::int64_t* valid_count, T* grad_logits) {
  for (std::int64_t t = blockIdx.x; t < tokens; t += gridDim.x) {
    const T* row = logits + t * vocab;
    T* out = grad_logits + t * vocab;
    auto label = static_cast<std::int64_t>(labels[t]);
    if (label == ignore_index) {
      for (std::int64_t j = threadIdx.x; j < vocab; j += blockDim.x) store_float(out + j, 0.0f);
      continue;
    }
    // A valid token means valid_count >= 1.
    float scale = mean ? *grad_loss / static_cast<float>(*valid_count) : *grad_loss;
    float lse = logsumexp[t];
    for (std::int64_t j = threadIdx.x; j < vocab; j += blockDim.x) {
      float p = expf(load_float(row + j) - lse);
      store_float(out + j, (j == label ? p - 1.0f : p) * scale);
    }
  }
}

}  // namespace

void cross_entropy_forward(const CrossEntropyProblem& p, float* logsumexp, float* loss, std::int64_t* valid_count,
                           cudaStream_t stream) {
  ZT_REQUIRE(p.vocab >= 1, "cross_entropy: the vocabulary must have at least one entry");
  dispatch_float_and_index_types(p.dtype, p.label_dtype, "cross_entropy", "labels", [&]<typename T, typename Label>() {
    ScratchBuffer token_loss(static_cast<std::size_t>(p.tokens) * sizeof(float), stream);
    const auto* labels = static_cast<const Label*>(p.labels);
    if (p.tokens > 0) {
      token_loss_kernel<<<grid_size(p.tokens, 1), row_block_threads(p.vocab, 1024), 0, stream>>>(
          static_cast<const T*>(p.logits), labels, p.tokens, p.vocab, p.ignore_index, logsumexp,
          token_loss.as<float>());
      ZT_CUDA_CHECK(cudaGetLastError());
    }
    reduce_loss_kernel<<<1, 1024, 0, stream>>>(token_loss.as<float>(), labels, p.tokens, p.ignore_index, p.mean, loss,
                                               valid_count);
    ZT_CUDA_CHECK(cudaGetLastError());
  });
}

void cross_entropy_backward(const CrossEntropyProblem& p, const float* grad_loss, const float* logsumexp,
                            const std::int64_t* valid_count, void* grad_logits, cudaStream_t stream) {
  if (p.tokens == 0) return;
  ZT_REQUIRE(p.vocab >= 1, "cross_entropy_backward: the vocabulary must have at least one entry");
  dispatch_float_and_index_types(p.dtype, p.label_dtype, "cross_entropy", "labels", [&]<typename T, typename Label>() {
    cross_entropy_backward_kernel<<<grid_size(p.tokens, 1), row_block_threads(p.vocab, 1024), 0, stream>>>(
        static_cast<const T*>(p.logits), static_cast<const Label*>(p.labels), p.tokens, p.vocab, p.ignore_index, p.mean,
        grad_loss, logsumexp, valid_count, static_cast<T*>(grad_logits));
  });
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda
