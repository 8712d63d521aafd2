#include "infer/paged_kv_cache.h"

#include <algorithm>

#include "ops/attention/attention.h"
#include "ops/attention/decode_attention.h"
#include "ops/attention/kv_cache_write.h"
#include "ops/gemm/few_rows_product.h"
#include "ops/rope/rope.h"
#include "runtime/error.h"

namespace zt::infer {
namespace {

// [length, ...] -> [sequences, length, ...], one copy per sequence, as attention reads it.
Tensor repeated(const Tensor& one, std::int64_t sequences) {
  Shape shape = one.shape();
  shape.insert(shape.begin(), sequences);
  return one.unsqueeze(0).expand(shape).contiguous();
}

// The rotation's frequencies on the device for a model whose heads rotate whole by rotate-half
// pairs (Qwen's); undefined otherwise (GLM's half-rotary interleaved pairs, or the CPU).
Tensor whole_head_frequencies(const models::ModelConfig& config, Device device) {
  if (!device.is_cuda() || config.rope.style != ops::RopeStyle::kRotateHalf || config.rope.rotary_fraction != 1.0 ||
      config.head_dim % 64 != 0 || config.head_dim > 256)
    return Tensor();
  const ops::GpuRope rope = ops::gpu_rope("paged KV cache", config.head_dim, config.rope);
  const std::vector<double> frequencies(rope.frequencies.inv_freq, rope.frequencies.inv_freq + config.head_dim / 2);
  return Tensor::from_values(frequencies, {config.head_dim / 2}, DType::kF32).to(device);
}

}  // namespace

PagedKvCache::PagedKvCache(const models::ModelConfig& config, std::int64_t num_blocks, std::int64_t block_size,
                           DType dtype, Device device)
    : block_size_(block_size), device_(device), rope_inv_freq_(whole_head_frequencies(config, device)) {
  ZT_REQUIRE(num_blocks > 0 && block_size > 0,
             "paged KV cache: needs a positive number of blocks and block size, got " + std::to_string(num_blocks) +
                 " blocks of " + std::to_string(block_size) + " tokens");
  const Shape shape{num_blocks, block_size, config.num_kv_heads, config.head_dim};
  for (std::int64_t layer = 0; layer < config.num_layers; ++layer) {
    key_pools_.push_back(Tensor::empty(shape, dtype, device));
    value_pools_.push_back(Tensor::empty(shape, dtype, device));
  }
  for (std::int64_t block = num_blocks - 1; block >= 0; --block) free_.push_back(static_cast<std::int32_t>(block));
}

void PagedKvCache::set_shared_prefix(std::vector<Tensor> keys, std::vector<Tensor> values,
                                     std::int64_t first_position) {
  ZT_REQUIRE(keys.size() == key_pools_.size() && values.size() == key_pools_.size(),
             "paged KV cache: a prefix needs keys and values for each of the " + std::to_string(key_pools_.size()) +
                 " layers");
  prefix_keys_ = std::move(keys);
  prefix_values_ = std::move(values);
  prefix_length_ = prefix_keys_.empty() ? 0 : prefix_keys_.front().size(0);
  first_position_ = first_position;
}

PagedKvCache::Sequence& PagedKvCache::sequence(SequenceId id) {
  auto found = sequences_.find(id);
  ZT_REQUIRE(found != sequences_.end(), "paged KV cache: no sequence " + std::to_string(id));
  return found->second;
}

const PagedKvCache::Sequence& PagedKvCache::sequence(SequenceId id) const {
  return const_cast<PagedKvCache*>(this)->sequence(id);
}

bool PagedKvCache::try_add(SequenceId id, std::int64_t max_tokens) {
  ZT_REQUIRE(sequences_.count(id) == 0, "paged KV cache: sequence " + std::to_string(id) + " is already cached");
  const std::int64_t needed = blocks_for(max_tokens);
  if (needed > free_blocks()) return false;
  Sequence added;
  added.capacity = needed * block_size_;
  added.blocks.assign(free_.end() - needed, free_.end());
  free_.resize(free_.size() - static_cast<std::size_t>(needed));
  write_prefix(added);
  added.length = prefix_length_;
  sequences_.emplace(id, std::move(added));
  return true;
}

std::int64_t PagedKvCache::slot_of(const Sequence& sequence, std::int64_t token) const {
  return sequence.blocks[static_cast<std::size_t>(token / block_size_)] * block_size_ + token % block_size_;
}

void PagedKvCache::write_prefix(const Sequence& added) {
  if (prefix_length_ == 0) return;
  std::vector<double> slots;
  for (std::int64_t t = 0; t < prefix_length_; ++t) slots.push_back(static_cast<double>(slot_of(added, t)));
  Tensor slot_tensor = Tensor::from_values(slots, {prefix_length_}, DType::kI64).to(device_);
  for (std::size_t layer = 0; layer < key_pools_.size(); ++layer)
    ops::write_kv_slots(key_pools_[layer], value_pools_[layer], prefix_keys_[layer], prefix_values_[layer],
                        slot_tensor);
}

void PagedKvCache::remove(SequenceId id) {
  Sequence& gone = sequence(id);
  free_.insert(free_.end(), gone.blocks.begin(), gone.blocks.end());
  sequences_.erase(id);
}

std::int64_t PagedKvCache::length(SequenceId id) const { return sequence(id).length; }

void PagedKvCache::set_batch(std::vector<SequenceId> sequences, std::vector<std::int64_t> new_tokens) {
  ZT_REQUIRE(sequences.size() == new_tokens.size() && !sequences.empty(),
             "paged KV cache: a batch names each of its sequences with its count of new tokens");
  for (std::size_t i = 0; i < sequences.size(); ++i) {
    const Sequence& s = sequence(sequences[i]);
    ZT_REQUIRE(s.length + new_tokens[i] <= s.capacity, "paged KV cache: sequence " + std::to_string(sequences[i]) +
                                                           " reserved room for " + std::to_string(s.capacity) +
                                                           " tokens; " + std::to_string(new_tokens[i]) +
                                                           " more do not fit after " + std::to_string(s.length));
  }
  batch_ = std::move(sequences);
  new_tokens_ = std::move(new_tokens);
}

Tensor PagedKvCache::slots_of_batch() const {
  std::vector<double> slots;
  for (std::size_t i = 0; i < batch_.size(); ++i) {
    const Sequence& s = sequence(batch_[i]);
    for (std::int64_t t = s.length; t < s.length + new_tokens_[i]; ++t)
      slots.push_back(static_cast<double>(slot_of(s, t)));
  }
  return Tensor::from_values(slots, {static_cast<std::int64_t>(slots.size())}, DType::kI64).to(device_);
}

// Block tables and lengths of the decoding sequences (the first decoding_ of the batch).
void PagedKvCache::upload_block_tables() {
  const auto rows = static_cast<std::size_t>(decoding_);
  auto widest = static_cast<std::size_t>(table_width_);
  for (std::size_t i = 0; i < rows; ++i) widest = std::max(widest, sequence(batch_[i]).blocks.size());
  std::vector<double> table(rows * widest, -1.0), lengths;
  for (std::size_t i = 0; i < rows; ++i) {
    const Sequence& s = sequence(batch_[i]);
    std::copy(s.blocks.begin(), s.blocks.end(), table.begin() + static_cast<std::ptrdiff_t>(i * widest));
    lengths.push_back(static_cast<double>(s.length + 1));
  }
  const auto count = static_cast<std::int64_t>(rows);
  block_table_ = Tensor::from_values(table, {count, static_cast<std::int64_t>(widest)}, DType::kI32).to(device_);
  seq_lens_ = Tensor::from_values(lengths, {count}, DType::kI32).to(device_);
}

DecodeStepBuffers::DecodeStepBuffers(std::int64_t rows, std::int64_t max_blocks, Device device)
    : rows(rows),
      ids(Tensor::zeros({rows}, DType::kI64, device)),
      positions(Tensor::zeros({rows}, DType::kI64, device)),
      cu_seqlens(Tensor::arange(0.0, static_cast<double>(rows + 1), 1.0, DType::kI32, device)),
      slots(Tensor::empty({rows}, DType::kI64, device)),
      block_table(Tensor::empty({rows, max_blocks}, DType::kI32, device)),
      seq_lens(Tensor::empty({rows}, DType::kI32, device)),
      host_ids(Tensor::empty_pinned({rows}, DType::kI64)),
      host_positions(Tensor::empty_pinned({rows}, DType::kI64)),
      host_slots(Tensor::empty_pinned({rows}, DType::kI64)),
      host_block_table(Tensor::empty_pinned({rows, max_blocks}, DType::kI32)),
      host_seq_lens(Tensor::empty_pinned({rows}, DType::kI32)) {}

void PagedKvCache::fill_step(const std::vector<SequenceId>& sequences, const std::vector<std::int64_t>& tokens,
                             DecodeStepBuffers& b, cudaStream_t stream) const {
  const std::int64_t rows = b.rows, width = b.block_table.size(1);
  ZT_REQUIRE(static_cast<std::int64_t>(sequences.size()) <= rows, "decode step: more sequences than buffer rows");
  auto* ids = b.host_ids.data<std::int64_t>();
  auto* positions = b.host_positions.data<std::int64_t>();
  auto* slots = b.host_slots.data<std::int64_t>();
  auto* table = b.host_block_table.data<std::int32_t>();
  auto* lengths = b.host_seq_lens.data<std::int32_t>();
  std::fill(ids, ids + rows, 0);
  std::fill(positions, positions + rows, 0);
  std::fill(slots, slots + rows, -1);
  std::fill(lengths, lengths + rows, 1);
  std::fill(table, table + rows * width, -1);
  for (std::size_t i = 0; i < sequences.size(); ++i) {
    const Sequence& s = sequence(sequences[i]);
    ZT_REQUIRE(s.length < s.capacity && static_cast<std::int64_t>(s.blocks.size()) <= width,
               "decode step: sequence " + std::to_string(sequences[i]) + " has no room left");
    ids[i] = tokens[i];
    positions[i] = s.length - prefix_length_ + first_position_;
    slots[i] = slot_of(s, s.length);
    lengths[i] = static_cast<std::int32_t>(s.length + 1);
    std::copy(s.blocks.begin(), s.blocks.end(), table + static_cast<std::int64_t>(i) * width);
  }
  b.ids.copy_from_async(b.host_ids, stream);
  b.positions.copy_from_async(b.host_positions, stream);
  b.slots.copy_from_async(b.host_slots, stream);
  b.block_table.copy_from_async(b.host_block_table, stream);
  b.seq_lens.copy_from_async(b.host_seq_lens, stream);
}

void PagedKvCache::advance(const std::vector<SequenceId>& sequences) {
  for (SequenceId id : sequences) ++sequence(id).length;
}

void PagedKvCache::begin_forward(const models::ModelConfig& config, const models::PackedShape& shape) {
  if (step_ != nullptr) {
    ZT_REQUIRE(
        shape.tokens == step_->rows && shape.sequences == step_->rows,
        "paged KV cache: a bound decode step takes one token for each of its " + std::to_string(step_->rows) + " rows");
    decoding_ = step_->rows;
    return;
  }
  std::int64_t tokens = 0, longest = 0;
  for (std::size_t i = 0; i < batch_.size(); ++i) {
    tokens += new_tokens_[i];
    longest = std::max(longest, sequence(batch_[i]).length + new_tokens_[i]);
  }
  ZT_REQUIRE(shape.sequences == static_cast<std::int64_t>(batch_.size()) && shape.tokens == tokens,
             "paged KV cache: the forward brings " + std::to_string(shape.sequences) + " sequences of " +
                 std::to_string(shape.tokens) + " tokens, the batch set for it " + std::to_string(batch_.size()) +
                 " of " + std::to_string(tokens));
  models::check_sliding_window(config, {tokens, shape.sequences, longest}, 0);
  decoding_ = 0;
  while (decoding_ < shape.sequences && new_tokens_[static_cast<std::size_t>(decoding_)] == 1) ++decoding_;
  std::vector<double> offsets{0.0};
  for (auto i = static_cast<std::size_t>(decoding_); i < batch_.size(); ++i) {
    ZT_REQUIRE(sequence(batch_[i]).length == prefix_length_,
               "paged KV cache: a prefill takes sequences with nothing cached beyond the prefix, after the decoding "
               "ones; sequence " +
                   std::to_string(batch_[i]) + " has " + std::to_string(sequence(batch_[i]).length) + " tokens");
    offsets.push_back(offsets.back() + static_cast<double>(new_tokens_[i]));
  }
  slots_ = slots_of_batch();
  if (decoding_ > 0) upload_block_tables();
  if (offsets.size() > 1)
    prefill_cu_seqlens_ =
        Tensor::from_values(offsets, {static_cast<std::int64_t>(offsets.size())}, DType::kI32).to(device_);
}

std::size_t PagedKvCache::layer_index(std::int64_t layer) const {
  const auto index = static_cast<std::size_t>(layer);
  ZT_REQUIRE(index < key_pools_.size(), "paged KV cache: layer " + std::to_string(layer) + " out of range");
  return index;
}

const Tensor& PagedKvCache::slots() const { return step_ != nullptr ? step_->slots : slots_; }

Tensor PagedKvCache::attend(std::int64_t layer, const Tensor& q, const Tensor& k, const Tensor& v,
                            const Tensor& cu_seqlens, double softmax_scale) {
  const std::size_t index = layer_index(layer);
  ops::write_kv_slots(key_pools_[index], value_pools_[index], k, v, slots());
  return attention(index, q, k, v, cu_seqlens, softmax_scale);
}

Tensor PagedKvCache::attend_unrotated(std::int64_t layer, const Tensor& q, const Tensor& k, const Tensor& v,
                                      const Tensor& positions, const ops::RopeConfig& rope, const Tensor& cu_seqlens,
                                      double softmax_scale) {
  const std::size_t index = layer_index(layer);
  // Decode attention reads q's heads at any token stride; the prefill's kernel reads
  // contiguous q, k and v, which the same launch writes.
  if (step_ != nullptr || decoding_ == cu_seqlens.numel() - 1) {
    ops::rope_and_write_kv_slots(q, k, v, positions, rope, key_pools_[index], value_pools_[index], slots());
    return attention(index, q, k, v, cu_seqlens, softmax_scale);
  }
  const ops::ContiguousQkv rotated =
      ops::rope_and_write_kv_slots_copied(q, k, v, positions, rope, key_pools_[index], value_pools_[index], slots());
  return attention(index, rotated.q, rotated.k, rotated.v, cu_seqlens, softmax_scale);
}

std::optional<Tensor> PagedKvCache::attend_projected(std::int64_t layer, const Tensor& x, const Tensor& qkv_weight,
                                                     const Tensor& qkv_bias, const Tensor& positions,
                                                     const Tensor& cu_seqlens, double softmax_scale) {
  if (!rope_inv_freq_.defined() || !(step_ != nullptr || decoding_ == cu_seqlens.numel() - 1)) return std::nullopt;
  const std::size_t index = layer_index(layer);
  const std::optional<Tensor> qkv = ops::few_rows_qkv_rope(
      x, qkv_weight, qkv_bias, {positions, rope_inv_freq_, slots(), key_pools_[index], value_pools_[index]});
  if (!qkv) return std::nullopt;
  const std::int64_t tokens = qkv->size(0), kv_heads = key_pools_[index].size(2), head_dim = key_pools_[index].size(3);
  const std::int64_t kv_size = kv_heads * head_dim, q_size = qkv->size(1) - 2 * kv_size;
  auto heads = [&](std::int64_t first, std::int64_t size) {
    return qkv->narrow(1, first, size).view({tokens, size / head_dim, head_dim});
  };
  return attention(index, heads(0, q_size), heads(q_size, kv_size), heads(q_size + kv_size, kv_size), cu_seqlens,
                   softmax_scale);
}

Tensor PagedKvCache::attention(std::size_t index, const Tensor& q, const Tensor& k, const Tensor& v,
                               const Tensor& cu_seqlens, double softmax_scale) {
  if (step_ != nullptr)
    return ops::decode_attention(q, key_pools_[index], value_pools_[index], step_->block_table, step_->seq_lens,
                                 softmax_scale);
  const std::int64_t sequences = cu_seqlens.numel() - 1;
  if (decoding_ == sequences)
    return ops::decode_attention(q, key_pools_[index], value_pools_[index], block_table_, seq_lens_, softmax_scale);
  if (decoding_ == 0)
    return ops::attention_forward(q, k, v, cu_seqlens, {.softmax_scale = softmax_scale, .causal = true},
                                  prefix_for(index, sequences))
        .out;
  return attend_mixed(index, q, k, v, softmax_scale);
}

// The shared prefix's keys and values, once per prefilling sequence (none without a prefix).
ops::AttentionPrefix PagedKvCache::prefix_for(std::size_t layer, std::int64_t sequences) const {
  if (prefix_length_ == 0) return {};
  return {repeated(prefix_keys_[layer], sequences), repeated(prefix_values_[layer], sequences)};
}

// A step that decodes and prefills: the decoding rows (the first decoding_ tokens) attend to
// the cache as a decode step does, the rest to their prompts as a prefill does.
Tensor PagedKvCache::attend_mixed(std::size_t layer, const Tensor& q, const Tensor& k, const Tensor& v,
                                  double softmax_scale) {
  const std::int64_t rest = q.size(0) - decoding_;
  Tensor out = Tensor::empty(q.shape(), q.dtype(), q.device());
  out.narrow(0, 0, decoding_)
      .copy_from(ops::decode_attention(q.narrow(0, 0, decoding_), key_pools_[layer], value_pools_[layer], block_table_,
                                       seq_lens_, softmax_scale));
  const std::int64_t prefilling = prefill_cu_seqlens_.numel() - 1;
  out.narrow(0, decoding_, rest)
      .copy_from(ops::attention_forward(q.narrow(0, decoding_, rest), k.narrow(0, decoding_, rest),
                                        v.narrow(0, decoding_, rest), prefill_cu_seqlens_,
                                        {.softmax_scale = softmax_scale, .causal = true}, prefix_for(layer, prefilling))
                     .out);
  return out;
}

void PagedKvCache::end_forward() {
  if (step_ != nullptr) return;  // the caller advances a bound step's sequences
  for (std::size_t i = 0; i < batch_.size(); ++i) sequence(batch_[i]).length += new_tokens_[i];
  batch_.clear();
  new_tokens_.clear();
}

}  // namespace zt::infer
