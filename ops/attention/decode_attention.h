// Decode attention over a paged KV cache: the attention of one new query token per sequence
// to everything cached for that sequence, as an inference engine runs it once per generated
// token. The cache is two pools of pages, key_pool and value_pool [num_blocks, block_size,
// num_kv_heads, head_dim]; row b of block_table lists the pages of sequence b in order, so its
// token t lies in page block_table[b][t / block_size] at offset t % block_size (write_kv_slots
// in ops/attention/kv_cache_write.h puts it there). The query is the sequence's last token and its own
// key and value are already cached, so it sees all seq_lens[b] tokens and needs no mask.
// Grouped-query heads read their kv head in place: query head h reads kv head
// h / (num_heads / num_kv_heads), as in ops/attention/attention.h.
//
// The CPU reference computes each row plainly (fp32 accumulation for 16-bit and float32,
// float64 for float64) and checks every length and page id it uses. The GPU path is
// flash-decoding (cuda/attention/decode/decode_attention.cuh, docs/KERNELS.md): each sequence's token range is
// cut into num_splits pieces chosen from sizes only, never from the lengths, so one launch
// shape serves any lengths up to the block table's capacity; the GPU reads seq_lens and
// block_table on the device and checks none of their values (a length is cut to [0, capacity],
// length 0 gives zeros, a page id outside the pools reads as zeros).
#pragma once

#include <cstddef>

#include "tensor/tensor.h"

namespace zt::ops {

struct DecodeAttentionOptions {
  // How many pieces the GPU cuts each sequence's token range into; 0 lets
  // decode_attention_num_splits choose. Any value from 1 to 4096 gives the same result up to
  // fp32 rounding, so a caller may fix it (with a workspace) for a CUDA graph. Unused on the CPU.
  int num_splits = 0;
  // Device scratch of at least decode_attention_workspace_bytes(q, num_splits) bytes on q's
  // device (any dtype, contiguous, 16-byte aligned); undefined: taken from the caching
  // allocator for the call. Unused on the CPU.
  Tensor workspace;
  // Where to write the result: contiguous [batch, num_heads, head_dim] of q's dtype on q's
  // device; undefined: a new tensor. Either way the result is returned.
  Tensor out;
};

// q [batch, num_heads, head_dim] (head_dim contiguous; other strides free);
// key_pool, value_pool contiguous [num_blocks, block_size, num_kv_heads, head_dim] of q's
// dtype (float32 or float64 on the CPU; float32, bfloat16 or float16 on the GPU, where
// head_dim must be a multiple of 8 up to 256); block_table int32 [batch, max_blocks_per_seq]
// of page ids (entries past a sequence's length are never read, e.g. -1); seq_lens int32
// [batch], each in 1 .. max_blocks_per_seq × block_size. All on one device. Returns
// softmax(softmax_scale · q·Kᵀ)·V per sequence and head, [batch, num_heads, head_dim] in
// q's dtype.
Tensor decode_attention(const Tensor& q, const Tensor& key_pool, const Tensor& value_pool, const Tensor& block_table,
                        const Tensor& seq_lens, double softmax_scale);
Tensor decode_attention(const Tensor& q, const Tensor& key_pool, const Tensor& value_pool, const Tensor& block_table,
                        const Tensor& seq_lens, double softmax_scale, const DecodeAttentionOptions& options);

// The num_splits the GPU path picks when options.num_splits is 0: from batch, the heads,
// block_table's capacity (max_blocks_per_seq × block_size) and the device's multiprocessor
// count, never from the lengths. 1 for CPU tensors.
int decode_attention_num_splits(const Tensor& q, const Tensor& key_pool, const Tensor& block_table);

// Bytes of GPU workspace a call with num_splits needs (0 for num_splits 1): fp32 partial
// outputs and log-sum-exps, batch × num_heads × num_splits × (head_dim + 1) × 4.
std::size_t decode_attention_workspace_bytes(const Tensor& q, int num_splits);

}  // namespace zt::ops
