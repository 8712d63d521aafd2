// The KV cache of many sequences generating at once, in fixed-size blocks of one shared pool
// per layer (vLLM's paging): a sequence holds the blocks its tokens need, listed in its block
// table, so sequences of any lengths share memory without copying, leave when they finish
// and free their blocks for the next ones.
//
// A forward is a prefill of newly added sequences (each sees its prompt and, with P-Tuning,
// the shared prefix), a decode step of one token per sequence (each sees all its cached
// tokens, through ops::decode_attention's paged kernel), or both at once: the decoding
// sequences first, one token each, then the new ones, so that one pass over the weights
// serves both and each part's attention runs as it would alone.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include <cuda_runtime_api.h>

#include "models/generation/kv_cache.h"
#include "ops/attention/attention.h"

namespace zt::infer {

using SequenceId = std::int64_t;

// The device inputs of one decode step of up to `rows` sequences, kept from step to step so
// that a CUDA graph captured over them replays with new contents (infer/decode_graph.h).
// Rows past the batch are padding: their keys and values are not stored, their output unused.
struct DecodeStepBuffers {
  DecodeStepBuffers(std::int64_t rows, std::int64_t max_blocks, Device device);
  std::int64_t rows;
  Tensor ids, positions;  // int64 [rows]
  Tensor cu_seqlens;      // int32 [rows + 1]: one token per row
  Tensor slots;           // int64 [rows]: -1 for padding
  Tensor block_table;     // int32 [rows, max_blocks]
  Tensor seq_lens;        // int32 [rows]
  // Pinned host twins of ids, positions, slots, block_table and seq_lens: filled, then copied.
  Tensor host_ids, host_positions, host_slots, host_block_table, host_seq_lens;
};

class PagedKvCache : public models::KvCache {
 public:
  PagedKvCache(const models::ModelConfig& config, std::int64_t num_blocks, std::int64_t block_size, DType dtype,
               Device device);

  std::int64_t block_size() const { return block_size_; }
  // Layer `layer`'s pools [num_blocks, block_size, kv_heads, head_dim], for kernels that read
  // and write the cache themselves (infer/persistent_decode.h).
  const Tensor& key_pool(std::int64_t layer) const { return key_pools_.at(static_cast<std::size_t>(layer)); }
  const Tensor& value_pool(std::int64_t layer) const { return value_pools_.at(static_cast<std::size_t>(layer)); }
  std::int64_t free_blocks() const { return static_cast<std::int64_t>(free_.size()); }
  std::int64_t blocks_for(std::int64_t tokens) const { return (tokens + block_size_ - 1) / block_size_; }

  // Keys and values per layer [prefix_len, kv_heads, head_dim] that every sequence added
  // from now on starts with (a P-Tuning v2 prefix). `first_position` is the position of each
  // sequence's first own token: 0 when the prefix takes no positions (ChatGLM's P-Tuning),
  // prefix_len when it counts as tokens already seen (PEFT's prefix tuning).
  void set_shared_prefix(std::vector<Tensor> keys, std::vector<Tensor> values, std::int64_t first_position = 0);
  std::int64_t prefix_length() const { return prefix_length_; }
  std::int64_t first_position() const { return first_position_; }
  // The position of the next token of `id`.
  std::int64_t next_position(SequenceId id) const { return length(id) - prefix_length_ + first_position_; }

  // Reserves the blocks of a sequence that will hold up to `max_tokens` tokens (prefix
  // included); false, reserving nothing, when too few blocks are free.
  bool try_add(SequenceId id, std::int64_t max_tokens);
  void remove(SequenceId id);
  // Tokens cached for `id`, the prefix included.
  std::int64_t length(SequenceId id) const;

  // Block tables at least this wide: decode attention cuts work by the table's capacity, so a
  // fixed width keeps eager steps and graph replays (infer/decode_graph.h) cut alike.
  void set_table_width(std::int64_t blocks) { table_width_ = blocks; }

  // The sequences of the next forward in packed order, and how many new tokens each brings:
  // those bringing one token first (decoding), then sequences with nothing cached beyond the
  // prefix (prefilling).
  void set_batch(std::vector<SequenceId> sequences, std::vector<std::int64_t> new_tokens);

  // Decode steps through fixed buffers: fills `buffers` for `tokens[i]` continuing
  // sequences[i] (queued on `stream`), then binds them so the next forwards read them in place
  // and leave lengths alone; advance() counts the step once it ran. bind(nullptr) unbinds.
  void fill_step(const std::vector<SequenceId>& sequences, const std::vector<std::int64_t>& tokens,
                 DecodeStepBuffers& buffers, cudaStream_t stream) const;
  void bind_step(const DecodeStepBuffers* buffers) { step_ = buffers; }
  void advance(const std::vector<SequenceId>& sequences);

  void begin_forward(const models::ModelConfig& config, const models::PackedShape& shape) override;
  Tensor attend(std::int64_t layer, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& cu_seqlens,
                double softmax_scale) override;
  // RoPE of q and k and the write of k and v as one launch on the GPU
  // (ops::rope_and_write_kv_slots, in place for decode rows, into contiguous copies for a
  // prefill's attention kernel), then the attention attend() runs.
  Tensor attend_unrotated(std::int64_t layer, const Tensor& q, const Tensor& k, const Tensor& v,
                          const Tensor& positions, const ops::RopeConfig& rope, const Tensor& cu_seqlens,
                          double softmax_scale) override;
  // For a decode step on the GPU whose heads rotate whole (rotate-half, head_dim 64 to 256 in
  // steps of 64), inside a FewRowsGemmScope of every product: the q/k/v product, RoPE and the
  // write of k and v as one launch (ops::few_rows_qkv_rope), then the attention attend() runs.
  std::optional<Tensor> attend_projected(std::int64_t layer, const Tensor& x, const Tensor& qkv_weight,
                                         const Tensor& qkv_bias, const Tensor& positions, const Tensor& cu_seqlens,
                                         double softmax_scale) override;
  void end_forward() override;

 private:
  struct Sequence {
    std::vector<std::int32_t> blocks;
    std::int64_t length = 0;
    std::int64_t capacity = 0;
  };
  Sequence& sequence(SequenceId id);
  const Sequence& sequence(SequenceId id) const;
  // Where token `token` of `sequence` lies in the pools: block * block_size + offset.
  std::int64_t slot_of(const Sequence& sequence, std::int64_t token) const;
  void write_prefix(const Sequence& sequence);
  Tensor slots_of_batch() const;
  void upload_block_tables();
  std::size_t layer_index(std::int64_t layer) const;
  const Tensor& slots() const;  // the new tokens' slots: the bound step's, or the batch's
  // The attention of the new tokens, whose keys and values are stored.
  Tensor attention(std::size_t layer, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& cu_seqlens,
                   double softmax_scale);
  Tensor attend_mixed(std::size_t layer, const Tensor& q, const Tensor& k, const Tensor& v, double softmax_scale);
  ops::AttentionPrefix prefix_for(std::size_t layer, std::int64_t sequences) const;

  std::int64_t block_size_;
  Device device_;
  // float32 [head_dim / 2] on the device: the frequencies ops::few_rows_qkv_rope rotates by;
  // undefined where the model's heads do not rotate whole by rotate-half pairs.
  Tensor rope_inv_freq_;
  std::vector<Tensor> key_pools_, value_pools_;  // per layer [num_blocks, block_size, kv_heads, head_dim]
  std::vector<std::int32_t> free_;
  std::map<SequenceId, Sequence> sequences_;
  std::vector<Tensor> prefix_keys_, prefix_values_;
  std::int64_t prefix_length_ = 0;
  std::int64_t first_position_ = 0;

  const DecodeStepBuffers* step_ = nullptr;
  std::int64_t table_width_ = 0;

  // The forward in flight.
  std::vector<SequenceId> batch_;
  std::vector<std::int64_t> new_tokens_;
  std::int64_t decoding_ = 0;  // the leading sequences that decode one token each
  Tensor slots_;               // int64 [tokens]: where each new token's k and v go
  Tensor block_table_;         // int32 [decoding, max blocks]
  Tensor seq_lens_;            // int32 [decoding]: cached tokens after this step
  Tensor prefill_cu_seqlens_;  // int32 [prefilling + 1]: the prefilling sequences' offsets, from 0
};

}  // namespace zt::infer
