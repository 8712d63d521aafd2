// Decode attention over a paged KV cache (flash-decoding): one query token per sequence
// attends to every token cached for that sequence. The cache is two pools of pages,
// key_pool and value_pool [num_blocks, block_size, num_kv_heads, head_dim]; row b of
// block_table [batch, max_blocks_per_seq] (int32) lists the pages of sequence b in order, so
// its token t lies in page block_table[b][t / block_size] at offset t % block_size. Query head
// h reads kv head h / (num_heads / num_kv_heads) (GQA), as in cuda/attention/attention_contract.cuh.
//
// Why split-KV: at decode time there are only batch × kv_heads independent problems, far too
// few blocks to read the cache at full bandwidth when batch is small. Each sequence's token
// range is cut into num_splits equal pieces; one block per (split, kv head, sequence) streams
// its piece of K and V once for every query head of the kv group, and writes an fp32 partial
// output and log-sum-exp; a second small kernel merges the splits. num_splits is a host-side
// choice made from sizes only (batch, heads, the SM count and the table's capacity
// max_blocks_per_seq × block_size), never from the lengths: the kernels read seq_lens from
// device memory, and a split past a sequence's end writes an empty partial (lse = −inf).
// The same launch therefore serves any lengths up to the capacity, and can be captured in a
// CUDA graph once and replayed while the sequences grow (with a preallocated workspace).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "runtime/dtype.h"

namespace zt::cuda {

struct DecodeAttentionDims {
  int batch = 0;
  int num_heads = 0;
  int num_kv_heads = 0;         // divides num_heads
  int head_dim = 0;             // a multiple of 8, at most 256
  std::int64_t num_blocks = 0;  // pages in each pool
  int block_size = 0;           // tokens per page
  int max_blocks_per_seq = 0;   // block_table's row length
  // Elements between the query rows of consecutive sequences and heads; head_dim elements of
  // a row are contiguous. Zero means the contiguous [batch, num_heads, head_dim] layout.
  std::int64_t q_batch_stride = 0;
  std::int64_t q_head_stride = 0;
  float softmax_scale = 0.0f;  // any finite value

  // Tokens one row of block_table can address.
  std::int64_t capacity() const { return static_cast<std::int64_t>(max_blocks_per_seq) * block_size; }
};

struct DecodeAttentionInputs {
  const void* q = nullptr;                    // [batch, num_heads, head_dim] with the strides above
  const void* key_pool = nullptr;             // contiguous [num_blocks, block_size, num_kv_heads, head_dim]
  const void* value_pool = nullptr;           // the same shape
  const std::int32_t* block_table = nullptr;  // device, contiguous [batch, max_blocks_per_seq]
  const std::int32_t* seq_lens = nullptr;     // device, [batch]
};

// The largest num_splits decode_attention takes.
inline constexpr int kDecodeAttentionMaxSplits = 4096;

// The split count decode_attention uses when the caller names none: as many as keep all
// blocks (batch × kv_heads × head groups of 16 × splits) in one wave of three per
// multiprocessor, but no split shorter than 128 tokens of the capacity and at most 128
// splits; 1 when the batch alone fills a wave. It depends only on dims and the SM count, so
// it stays fixed while the lengths change.
int decode_attention_num_splits(const DecodeAttentionDims& dims, int multiprocessors);
// The same for the current device.
int decode_attention_num_splits(const DecodeAttentionDims& dims);

// Bytes of device workspace a launch with num_splits needs: fp32 partial outputs
// [batch, num_heads, num_splits, head_dim] and their log-sum-exps [batch, num_heads,
// num_splits]; 0 for num_splits = 1, which writes the output directly.
std::size_t decode_attention_workspace_bytes(const DecodeAttentionDims& dims, int num_splits);

// out: contiguous [batch, num_heads, head_dim] of dtype, fully written. dtype float32,
// bfloat16 or float16 with fp32 accumulation; bfloat16/float16 with head_dim 64 or 128 take
// the tensor-core kernel, which rounds the (unnormalised) probabilities to the dtype before
// P·V as FlashAttention does; everything else a CUDA-core kernel. workspace: at least
// decode_attention_workspace_bytes(dims, num_splits) bytes, 16-byte aligned, or null to take
// it from the caching allocator for this launch (not allowed while a graph is captured).
// Lengths are read on the device and never checked there: a length is clamped to
// [0, capacity], a sequence of length 0 gets zeros, and a page id outside [0, num_blocks)
// reads as zeros instead of faulting; ops::decode_attention checks all of it on the CPU.
void decode_attention(const DecodeAttentionDims& dims, const DecodeAttentionInputs& inputs, DType dtype, void* out,
                      int num_splits, void* workspace, cudaStream_t stream);

}  // namespace zt::cuda
