#include "ops/attention/decode_attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "cuda/attention/decode/decode_attention.cuh"
#include "ops/elementwise/elementwise_host.h"
#include "ops/op_checks.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/streams/current_stream.h"

namespace zt::ops {
namespace {

constexpr const char* kOp = "decode_attention";
constexpr std::int64_t kCudaMaxHeadDim = 256;

std::string head() { return std::string(kOp) + ": "; }

struct DecodeLayout {
  std::int64_t batch = 0, num_heads = 0, num_kv_heads = 0, head_dim = 0;
  std::int64_t num_blocks = 0, block_size = 0, max_blocks = 0;

  std::int64_t group() const { return num_heads / num_kv_heads; }
  std::int64_t capacity() const { return max_blocks * block_size; }
};

void check_int32(const char* name, const Tensor& t) {
  ZT_REQUIRE(t.dtype() == DType::kI32, head() + name + " must be int32, got " + dtype_name(t.dtype()));
}

// The sizes a decode reads off q [batch, heads, head_dim], the pools and the block table.
DecodeLayout layout_of(const Tensor& q, const Tensor& key_pool, const Tensor& block_table) {
  DecodeLayout layout;
  layout.batch = q.size(0);
  layout.num_heads = q.size(1);
  layout.head_dim = q.size(2);
  layout.num_blocks = key_pool.size(0);
  layout.block_size = key_pool.size(1);
  layout.num_kv_heads = key_pool.size(2);
  layout.max_blocks = block_table.size(1);
  return layout;
}

// Shapes, dtypes and devices of every argument; the values of seq_lens and block_table are
// checked separately (on the CPU only).
DecodeLayout check_inputs(const Tensor& q, const Tensor& key_pool, const Tensor& value_pool, const Tensor& block_table,
                          const Tensor& seq_lens, double softmax_scale) {
  const char* op = kOp;
  check_same_device(op, {{"q", &q},
                         {"key_pool", &key_pool},
                         {"value_pool", &value_pool},
                         {"block_table", &block_table},
                         {"seq_lens", &seq_lens}});
  check_same_dtype(op, {{"q", &q}, {"key_pool", &key_pool}, {"value_pool", &value_pool}});
  check_float_on_device(op, {"q", &q});
  check_dim(op, {"q", &q}, 3);
  check_dim(op, {"key_pool", &key_pool}, 4);
  check_same_shape(op, {"key_pool", &key_pool}, {"value_pool", &value_pool});
  check_size(op, {"key_pool", &key_pool}, 3, q.size(2), "head_dim, as q " + shape_str(q.shape()) + " has");
  ZT_REQUIRE(key_pool.size(2) >= 1 && q.size(1) % key_pool.size(2) == 0,
             head() + "q has " + std::to_string(q.size(1)) + " heads (shape " + shape_str(q.shape()) +
                 ") but key_pool has " + std::to_string(key_pool.size(2)) + " kv heads (shape " +
                 shape_str(key_pool.shape()) + "); num_heads must be a positive multiple of num_kv_heads");
  ZT_REQUIRE(q.size(2) >= 1, head() + "q has shape " + shape_str(q.shape()) + "; head_dim must be at least 1");
  ZT_REQUIRE(key_pool.size(1) >= 1, head() + "key_pool has shape " + shape_str(key_pool.shape()) +
                                        "; block_size (dimension 1) must be at least 1");
  for (const NamedTensor& pool : {NamedTensor{"key_pool", &key_pool}, NamedTensor{"value_pool", &value_pool}})
    ZT_REQUIRE(pool.second->is_contiguous(),
               head() + pool.first + " must be contiguous (it is the cache read in place), got shape " +
                   shape_str(pool.second->shape()) + " with strides " + shape_str(pool.second->strides()));

  check_int32("block_table", block_table);
  check_dim(op, {"block_table", &block_table}, 2);
  check_size(op, {"block_table", &block_table}, 0, q.size(0), "batch, as q " + shape_str(q.shape()) + " has");
  check_int32("seq_lens", seq_lens);
  check_dim(op, {"seq_lens", &seq_lens}, 1);
  check_size(op, {"seq_lens", &seq_lens}, 0, q.size(0), "batch, as q " + shape_str(q.shape()) + " has");
  ZT_REQUIRE(std::isfinite(softmax_scale),
             head() + "softmax_scale is " + std::to_string(softmax_scale) + "; it must be finite");

  return layout_of(q, key_pool, block_table);
}

void check_cuda_limits(const Tensor& q, const DecodeLayout& layout) {
  ZT_REQUIRE(layout.head_dim % 8 == 0 && layout.head_dim <= kCudaMaxHeadDim,
             head() + "q has shape " + shape_str(q.shape()) + "; on the GPU head_dim must be a multiple of 8 up to " +
                 std::to_string(kCudaMaxHeadDim) + ", got " + std::to_string(layout.head_dim));
  const std::int64_t head_groups = (layout.group() + 15) / 16;
  ZT_REQUIRE(layout.batch <= 65535 && layout.num_kv_heads * head_groups <= 65535,
             head() + "batch " + std::to_string(layout.batch) + " and num_kv_heads × ceil(group / 16) " +
                 std::to_string(layout.num_kv_heads * head_groups) + " must each be at most 65535 on the GPU");
  ZT_REQUIRE(
      layout.block_size <= std::numeric_limits<int>::max() && layout.max_blocks <= std::numeric_limits<int>::max(),
      head() + "block_size " + std::to_string(layout.block_size) + " and max_blocks_per_seq " +
          std::to_string(layout.max_blocks) + " must fit in int32 on the GPU");
}

// Every length in 1 .. capacity and every page a sequence uses inside the pools.
void check_values(const DecodeLayout& layout, const std::vector<std::int32_t>& lens,
                  const std::vector<std::int32_t>& table) {
  const std::string capacity = std::to_string(layout.max_blocks) + " blocks of " + std::to_string(layout.block_size) +
                               " tokens (" + std::to_string(layout.capacity()) + " tokens)";
  for (std::int64_t b = 0; b < layout.batch; ++b) {
    const std::int64_t len = lens[b];
    const std::string which = "seq_lens[" + std::to_string(b) + "] is " + std::to_string(len);
    ZT_REQUIRE(len >= 1, head() + which +
                             "; every sequence needs at least one cached token (the query's own key and value, "
                             "written with write_kv_slots first)");
    ZT_REQUIRE(len <= layout.capacity(), head() + which + " but a block_table row holds " + capacity +
                                             "; give the sequence more blocks (a wider block_table)");
    const std::int64_t used = (len + layout.block_size - 1) / layout.block_size;
    for (std::int64_t i = 0; i < used; ++i) {
      const std::int32_t page = table[b * layout.max_blocks + i];
      ZT_REQUIRE(page >= 0 && page < layout.num_blocks,
                 head() + "block_table[" + std::to_string(b) + "][" + std::to_string(i) + "] is " +
                     std::to_string(page) + " but the pools have " + std::to_string(layout.num_blocks) +
                     " blocks; sequence " + std::to_string(b) + " of length " + std::to_string(len) +
                     " uses its first " + std::to_string(used) + " entries, which must be block ids in 0 .. " +
                     std::to_string(layout.num_blocks - 1));
    }
  }
}

std::vector<std::int32_t> host_int32(const Tensor& t) {
  Tensor host = t.contiguous();
  const std::int32_t* data = host.data<std::int32_t>();
  return std::vector<std::int32_t>(data, data + host.numel());
}

template <typename T>
void decode_cpu(const T* q, const T* key_pool, const T* value_pool, const std::vector<std::int32_t>& table,
                const std::vector<std::int32_t>& lens, T* out, const DecodeLayout& layout, double softmax_scale) {
  using A = host::Acc<T>;
  const std::int64_t d = layout.head_dim, group = layout.group();
  const A scale = static_cast<A>(softmax_scale);
  std::vector<A> scores, acc(static_cast<std::size_t>(d));
  // Element offset of token t of sequence b for kv head g in either pool.
  auto row = [&](std::int64_t b, std::int64_t t, std::int64_t g) {
    const std::int64_t page = table[b * layout.max_blocks + t / layout.block_size];
    return ((page * layout.block_size + t % layout.block_size) * layout.num_kv_heads + g) * d;
  };
  for (std::int64_t b = 0; b < layout.batch; ++b) {
    const std::int64_t len = lens[b];
    scores.assign(static_cast<std::size_t>(len), A(0));
    for (std::int64_t h = 0; h < layout.num_heads; ++h) {
      const T* query = q + (b * layout.num_heads + h) * d;
      const std::int64_t g = h / group;
      A top = -std::numeric_limits<A>::infinity();
      for (std::int64_t t = 0; t < len; ++t) {
        const T* key = key_pool + row(b, t, g);
        A dot = 0;
        for (std::int64_t c = 0; c < d; ++c) dot += host::load(query[c]) * host::load(key[c]);
        scores[t] = scale * dot;
        top = std::max(top, scores[t]);
      }
      A sum = 0;
      std::fill(acc.begin(), acc.end(), A(0));
      for (std::int64_t t = 0; t < len; ++t) {
        const A p = std::exp(scores[t] - top);
        sum += p;
        const T* value = value_pool + row(b, t, g);
        for (std::int64_t c = 0; c < d; ++c) acc[c] += p * host::load(value[c]);
      }
      T* dst = out + (b * layout.num_heads + h) * d;
      for (std::int64_t c = 0; c < d; ++c) dst[c] = host::store<T>(acc[c] / sum);
    }
  }
}

cuda::DecodeAttentionDims kernel_dims(const DecodeLayout& layout, double softmax_scale) {
  cuda::DecodeAttentionDims dims;
  dims.batch = static_cast<int>(layout.batch);
  dims.num_heads = static_cast<int>(layout.num_heads);
  dims.num_kv_heads = static_cast<int>(layout.num_kv_heads);
  dims.head_dim = static_cast<int>(layout.head_dim);
  dims.num_blocks = layout.num_blocks;
  dims.block_size = static_cast<int>(layout.block_size);
  dims.max_blocks_per_seq = static_cast<int>(layout.max_blocks);
  dims.softmax_scale = static_cast<float>(softmax_scale);
  return dims;
}

Tensor output_for(const Tensor& q, const DecodeAttentionOptions& options) {
  if (!options.out.defined()) return Tensor::empty(q.shape(), q.dtype(), q.device());
  const Tensor& out = options.out;
  check_same_device(kOp, {{"q", &q}, {"options.out", &out}});
  check_same_dtype(kOp, {{"q", &q}, {"options.out", &out}});
  ZT_REQUIRE(out.shape() == q.shape() && out.is_contiguous(),
             head() + "options.out has shape " + shape_str(out.shape()) +
                 (out.is_contiguous() ? "" : " (not contiguous)") + "; it must be a contiguous tensor of q's shape " +
                 shape_str(q.shape()));
  return out;
}

Tensor forward_cuda(const DecodeLayout& layout, const Tensor& q_in, const Tensor& key_pool, const Tensor& value_pool,
                    const Tensor& block_table, const Tensor& seq_lens, double softmax_scale,
                    const DecodeAttentionOptions& options, Tensor out) {
  DeviceGuard guard(q_in.device().index);
  check_cuda_limits(q_in, layout);
  // Rows of head_dim contiguous, and no broadcast (zero-stride) batch or head dimension.
  const bool rows =
      q_in.stride(2) == 1 && (q_in.size(0) <= 1 || q_in.stride(0) != 0) && (q_in.size(1) <= 1 || q_in.stride(1) != 0);
  const Tensor q = rows ? q_in : q_in.contiguous();
  const Tensor table = block_table.contiguous(), lens = seq_lens.contiguous();
  cuda::DecodeAttentionDims dims = kernel_dims(layout, softmax_scale);
  dims.q_batch_stride = q.stride(0);
  dims.q_head_stride = q.stride(1);
  ZT_REQUIRE(options.num_splits >= 0 && options.num_splits <= cuda::kDecodeAttentionMaxSplits,
             head() + "options.num_splits is " + std::to_string(options.num_splits) +
                 "; it must be 0 (choose) or 1 .. " + std::to_string(cuda::kDecodeAttentionMaxSplits));
  const int splits = options.num_splits > 0 ? options.num_splits : cuda::decode_attention_num_splits(dims);
  void* workspace = nullptr;
  if (options.workspace.defined()) {
    const Tensor& w = options.workspace;
    check_same_device(kOp, {{"q", &q_in}, {"options.workspace", &w}});
    const std::size_t needed = cuda::decode_attention_workspace_bytes(dims, splits);
    ZT_REQUIRE(w.is_contiguous() && w.nbytes() >= needed && reinterpret_cast<std::uintptr_t>(w.data_ptr()) % 16 == 0,
               head() + "options.workspace holds " + std::to_string(w.nbytes()) + " bytes" +
                   (w.is_contiguous() ? "" : " (not contiguous)") + " but " + std::to_string(splits) + " splits need " +
                   std::to_string(needed) +
                   " contiguous bytes starting on a 16-byte boundary; size it with decode_attention_workspace_bytes");
    workspace = w.data_ptr();
  }
  cuda::DecodeAttentionInputs inputs{q.data_ptr(), key_pool.data_ptr(), value_pool.data_ptr(),
                                     table.data<std::int32_t>(), lens.data<std::int32_t>()};
  cuda::decode_attention(dims, inputs, q.dtype(), out.data_ptr(), splits, workspace, current_stream());
  return out;
}

}  // namespace

Tensor decode_attention(const Tensor& q, const Tensor& key_pool, const Tensor& value_pool, const Tensor& block_table,
                        const Tensor& seq_lens, double softmax_scale) {
  return decode_attention(q, key_pool, value_pool, block_table, seq_lens, softmax_scale, DecodeAttentionOptions{});
}

Tensor decode_attention(const Tensor& q, const Tensor& key_pool, const Tensor& value_pool, const Tensor& block_table,
                        const Tensor& seq_lens, double softmax_scale, const DecodeAttentionOptions& options) {
  const DecodeLayout layout = check_inputs(q, key_pool, value_pool, block_table, seq_lens, softmax_scale);
  Tensor out = output_for(q, options);
  if (q.device().is_cuda())
    return forward_cuda(layout, q, key_pool, value_pool, block_table, seq_lens, softmax_scale, options, out);
  const std::vector<std::int32_t> lens = host_int32(seq_lens), table = host_int32(block_table);
  check_values(layout, lens, table);
  const Tensor qc = q.contiguous();
  host::dispatch_float(q.dtype(), kOp, [&]<typename T>() {
    decode_cpu<T>(qc.data<T>(), key_pool.data<T>(), value_pool.data<T>(), table, lens, out.data<T>(), layout,
                  softmax_scale);
  });
  return out;
}

int decode_attention_num_splits(const Tensor& q, const Tensor& key_pool, const Tensor& block_table) {
  const char* op = "decode_attention_num_splits";
  check_dim(op, {"q", &q}, 3);
  check_dim(op, {"key_pool", &key_pool}, 4);
  check_dim(op, {"block_table", &block_table}, 2);
  if (!q.device().is_cuda()) return 1;
  const DecodeLayout layout = layout_of(q, key_pool, block_table);
  ZT_REQUIRE(layout.num_kv_heads >= 1 && layout.num_heads % layout.num_kv_heads == 0,
             std::string(op) + ": q has " + std::to_string(layout.num_heads) + " heads but key_pool has " +
                 std::to_string(layout.num_kv_heads) +
                 " kv heads; num_heads must be a positive multiple of num_kv_heads");
  DeviceGuard guard(q.device().index);
  return cuda::decode_attention_num_splits(kernel_dims(layout, 1.0));
}

std::size_t decode_attention_workspace_bytes(const Tensor& q, int num_splits) {
  check_dim("decode_attention_workspace_bytes", {"q", &q}, 3);
  cuda::DecodeAttentionDims dims;
  dims.batch = static_cast<int>(q.size(0));
  dims.num_heads = static_cast<int>(q.size(1));
  dims.head_dim = static_cast<int>(q.size(2));
  return cuda::decode_attention_workspace_bytes(dims, num_splits);
}

}  // namespace zt::ops
