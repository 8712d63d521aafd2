// Writes the keys and values of new tokens into a paged KV cache (the pools of
// cuda/attention/decode/decode_attention.cuh, [num_blocks, block_size, num_kv_heads, head_dim]): token i goes
// to slot slots[i] = block * block_size + offset_in_block, i.e. row slots[i] of the pools seen
// as [num_slots, num_kv_heads, head_dim]. A negative slot skips its token (padding), and so
// does a slot past num_slots, rather than writing out of bounds. It is a copy, so any element
// size works; one kernel writes both pools, 16 bytes a thread when every row and stride allows.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace zt::cuda {

struct KvSlotWriteDims {
  std::int64_t tokens = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  std::int64_t num_slots = 0;  // num_blocks × block_size
  // Elements between tokens and between heads of k and v; head_dim elements are contiguous.
  std::int64_t k_token_stride = 0, k_head_stride = 0;
  std::int64_t v_token_stride = 0, v_head_stride = 0;
};

// k, v: [tokens, num_kv_heads, head_dim] with the strides above; slots: device int64 [tokens];
// key_pool, value_pool: contiguous pools of element_bytes (2, 4 or 8) elements. Duplicate
// slots leave one of their tokens, which one unspecified.
void write_kv_slots(const KvSlotWriteDims& dims, const void* k, const void* v, const std::int64_t* slots,
                    void* key_pool, void* value_pool, std::size_t element_bytes, cudaStream_t stream);

}  // namespace zt::cuda
