// Puts the keys and values of new tokens into a paged KV cache, the pools that
// ops/attention/decode_attention.h reads: token i goes to slot slots[i] = block * block_size +
// offset_in_block, i.e. key_pool[block, offset_in_block] and value_pool[block,
// offset_in_block] (all kv heads). A negative slot skips its token (padding in a batch).
// Prefill writes all of a prompt's tokens at once; a decode step writes one per sequence.
#pragma once

#include "ops/rope/rope.h"
#include "tensor/tensor.h"

namespace zt::ops {

// key_pool, value_pool: contiguous [num_blocks, block_size, num_kv_heads, head_dim] of one
// floating dtype, written in place; k, v [tokens, num_kv_heads, head_dim] of that dtype
// (head_dim contiguous, other strides free, so views of a fused qkv projection work);
// slots int64 [tokens]. All on one device. A slot past num_blocks × block_size is an error on
// the CPU; the GPU, which does not read slots back to the host, skips it. Two tokens with one
// slot leave the later one on the CPU and either one on the GPU.
void write_kv_slots(Tensor& key_pool, Tensor& value_pool, const Tensor& k, const Tensor& v, const Tensor& slots);

// rope_forward_inplace(q, k, positions, rope), then write_kv_slots(key_pool, value_pool, k, v,
// slots), with the same values: on the GPU one launch that reads k once instead of two (a
// decode step's RoPE and cache write, ops/rope/rope.h). q and k are rotated in place, so
// their heads and head dims must be contiguous (any token stride); v's too on the GPU, which
// otherwise takes the two ops.
void rope_and_write_kv_slots(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& positions,
                             const RopeConfig& rope, Tensor& key_pool, Tensor& value_pool, const Tensor& slots);

// As rope_and_write_kv_slots, but q, k and v are left as they are and returned rotated (q, k)
// and copied (v) as contiguous tensors, in the same launch on the GPU: the inputs of an
// attention kernel that reads contiguous q, k, v (a prefill), where rotating strided slices of
// a joined projection in place would need three copies after it.
struct ContiguousQkv {
  Tensor q, k, v;
};
ContiguousQkv rope_and_write_kv_slots_copied(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& positions,
                                             const RopeConfig& rope, Tensor& key_pool, Tensor& value_pool,
                                             const Tensor& slots);

}  // namespace zt::ops
