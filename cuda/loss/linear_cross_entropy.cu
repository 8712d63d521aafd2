#include "cuda/loss/linear_cross_entropy.cuh"

#include <algorithm>
#include <string>

#include "cuda/common/scratch_buffer.h"
#include "cuda/gemm/cublaslt_gemm.h"
#include "cuda/loss/linear_cross_entropy_kernels.cuh"
#include "runtime/check.h"
#include "runtime/error.h"

namespace zt::cuda {
namespace {

// A chunk's logits budget. With the weight's gradient wanted, every chunk reads and writes the
// whole fp32 [vocab, hidden] gradient (β = 1), so fewer, larger chunks pay; with the weight
// frozen (LoRA, P-Tuning) a chunk's GEMMs cost the same per token at a quarter of the size, and
// the smaller buffer lowers the step's peak, which the loss head sets at the end of the forward.
constexpr std::size_t kChunkBytesWithWeightGradient = std::size_t{1} << 30;
constexpr std::size_t kChunkBytesFrozenWeight = std::size_t{256} << 20;
constexpr std::int64_t kChunkMultiple = 128;  // whole GEMM tiles of tokens

// Rows padded to 8 elements keep every row 16-byte aligned for the row kernel's loads.
std::int64_t padded_vocab(std::int64_t vocab) { return (vocab + 7) / 8 * 8; }

DType logits_dtype(bool float32_logits, DType dtype) { return float32_logits ? DType::kF32 : dtype; }

void check_problem(const LinearCrossEntropyProblem& p) {
  const std::string sizes = "tokens " + std::to_string(p.tokens) + ", hidden_size " + std::to_string(p.hidden_size) +
                            ", vocab " + std::to_string(p.vocab) + ", chunk_tokens " + std::to_string(p.chunk_tokens);
  ZT_REQUIRE(p.tokens >= 0 && p.hidden_size >= 1 && p.vocab >= 1 && p.chunk_tokens >= 1,
             "linear_cross_entropy: " + sizes + "; tokens must be >= 0 and the others >= 1");
  ZT_REQUIRE(p.dtype == DType::kF32 || p.dtype == DType::kBF16 || p.dtype == DType::kF16,
             std::string("linear_cross_entropy: dtype ") + dtype_name(p.dtype) +
                 " is not supported on the GPU; use float32, bfloat16 or float16");
}

// Operand views of one chunk, as stored row-major.
struct ChunkViews {
  GemmOperand hidden;       // [rows, H]
  GemmOperand grad_logits;  // [rows, V], leading dimension in the gradient dtype
  GemmResult logits;        // [rows, V]
};

ChunkViews chunk_views(const LinearCrossEntropyProblem& p, void* logits, std::int64_t start, std::int64_t rows) {
  std::int64_t ld = padded_vocab(p.vocab);
  std::int64_t grad_ld =
      ld * static_cast<std::int64_t>(dtype_size(logits_dtype(p.float32_logits, p.dtype)) / dtype_size(p.dtype));
  const char* h = static_cast<const char*>(p.hidden) + start * p.hidden_size * dtype_size(p.dtype);
  return {{h, rows, p.hidden_size, p.hidden_size, 0, false},
          {logits, rows, p.vocab, grad_ld, 0, false},
          {logits, rows, p.vocab, ld, 0}};
}

void run_chunk(const LinearCrossEntropyProblem& p, const LinearCrossEntropyResult& r, void* logits, float* token_loss,
               std::int64_t start, std::int64_t rows, cudaStream_t stream) {
  DType ldt = logits_dtype(p.float32_logits, p.dtype);
  ChunkViews v = chunk_views(p, logits, start, rows);
  GemmOperand weight{p.weight, p.vocab, p.hidden_size, p.hidden_size, 0, false};
  GemmOperand weight_t = weight;
  weight_t.transpose = true;
  gemm_accumulate(p.dtype, ldt, v.hidden, weight_t, v.logits, 0.0f, "linear_cross_entropy logits = hidden * weight^T",
                  stream);
  bool grads = r.grad_hidden != nullptr || r.grad_weight != nullptr;
  const char* labels = static_cast<const char*>(p.labels) + start * dtype_size(p.label_dtype);
  chunk_loss_and_grad({logits, ldt, padded_vocab(p.vocab), p.dtype, labels, p.label_dtype, rows, p.vocab,
                       p.ignore_index, p.mean, p.grad_scale, r.valid_count, token_loss + start, grads,
                       p.token_weights != nullptr ? p.token_weights + start : nullptr},
                      stream);
  if (r.grad_hidden != nullptr) {
    char* gh = static_cast<char*>(r.grad_hidden) + start * p.hidden_size * dtype_size(p.dtype);
    gemm_accumulate(p.dtype, p.dtype, v.grad_logits, weight, {gh, rows, p.hidden_size, p.hidden_size, 0}, 0.0f,
                    "linear_cross_entropy grad_hidden = dlogits * weight", stream);
  }
  if (r.grad_weight != nullptr) {
    GemmOperand dlogits_t = v.grad_logits;
    dlogits_t.transpose = true;
    // The first chunk overwrites (beta 0 never reads the output), later ones add.
    gemm_accumulate(p.dtype, DType::kF32, dlogits_t, v.hidden,
                    {r.grad_weight, p.vocab, p.hidden_size, p.hidden_size, 0}, start == 0 ? 0.0f : 1.0f,
                    "linear_cross_entropy grad_weight += dlogits^T * hidden", stream);
  }
}

}  // namespace

std::size_t chunk_logits_bytes(std::int64_t chunk_tokens, std::int64_t vocab, bool float32_logits, DType dtype) {
  return static_cast<std::size_t>(chunk_tokens) * static_cast<std::size_t>(padded_vocab(vocab)) *
         dtype_size(logits_dtype(float32_logits, dtype));
}

// The fewest chunks that fit the budget, made as even as the multiple allows: 8192 tokens in
// 3 chunks of 2816, 2816 and 2560 rather than 3456, 3456 and a 1280-token chunk whose three
// GEMMs run far below the others' efficiency.
std::int64_t default_chunk_tokens(std::int64_t tokens, std::int64_t vocab, bool float32_logits, DType dtype,
                                  bool weight_gradient) {
  const std::size_t budget = weight_gradient ? kChunkBytesWithWeightGradient : kChunkBytesFrozenWeight;
  auto fit = static_cast<std::int64_t>(budget / chunk_logits_bytes(1, vocab, float32_logits, dtype));
  if (fit >= kChunkMultiple) fit = fit / kChunkMultiple * kChunkMultiple;
  fit = std::max<std::int64_t>(1, fit);
  if (tokens <= fit) return std::max<std::int64_t>(1, tokens);
  const std::int64_t chunks = (tokens + fit - 1) / fit;
  const std::int64_t even = (tokens + chunks - 1) / chunks;
  const std::int64_t rounded =
      fit >= kChunkMultiple ? (even + kChunkMultiple - 1) / kChunkMultiple * kChunkMultiple : even;
  return std::min(fit, rounded);
}

void linear_cross_entropy(const LinearCrossEntropyProblem& p, const LinearCrossEntropyResult& r, cudaStream_t stream) {
  check_problem(p);
  count_valid_labels(p.labels, p.label_dtype, p.tokens, p.ignore_index, r.valid_count, stream);
  // The caller's per-token losses when asked for, else a scratch buffer.
  ScratchBuffer scratch(r.token_loss != nullptr ? 0 : static_cast<std::size_t>(p.tokens) * sizeof(float), stream);
  float* token_loss = r.token_loss != nullptr ? r.token_loss : scratch.as<float>();
  if (p.tokens == 0 && r.grad_weight != nullptr)
    ZT_CUDA_CHECK(
        cudaMemsetAsync(r.grad_weight, 0, static_cast<std::size_t>(p.vocab * p.hidden_size) * sizeof(float), stream));
  if (p.tokens > 0) {
    std::int64_t chunk = std::min(p.chunk_tokens, p.tokens);
    ScratchBuffer logits(chunk_logits_bytes(chunk, p.vocab, p.float32_logits, p.dtype), stream);
    for (std::int64_t start = 0; start < p.tokens; start += chunk)
      run_chunk(p, r, logits.data(), token_loss, start, std::min(chunk, p.tokens - start), stream);
  }
  reduce_token_loss(token_loss, p.tokens, p.mean, r.valid_count, r.loss, stream);
}

}  // namespace zt::cuda
