#include "ops/attention/kv_cache_write.h"

#include <cstdint>
#include <cstring>
#include <string>

#include "cuda/attention/decode/kv_cache_write.cuh"
#include "ops/op_checks.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/streams/current_stream.h"

namespace zt::ops {
namespace {

constexpr const char* kOp = "write_kv_slots";

std::string head() { return std::string(kOp) + ": "; }

void check_inputs(const Tensor& key_pool, const Tensor& value_pool, const Tensor& k, const Tensor& v,
                  const Tensor& slots) {
  const char* op = kOp;
  check_same_device(op,
                    {{"key_pool", &key_pool}, {"value_pool", &value_pool}, {"k", &k}, {"v", &v}, {"slots", &slots}});
  check_same_dtype(op, {{"key_pool", &key_pool}, {"value_pool", &value_pool}, {"k", &k}, {"v", &v}});
  check_floating(op, {"key_pool", &key_pool});
  check_dim(op, {"key_pool", &key_pool}, 4);
  check_same_shape(op, {"key_pool", &key_pool}, {"value_pool", &value_pool});
  for (const NamedTensor& pool : {NamedTensor{"key_pool", &key_pool}, NamedTensor{"value_pool", &value_pool}})
    ZT_REQUIRE(pool.second->is_contiguous(),
               head() + pool.first + " must be contiguous (it is the cache written in place), got shape " +
                   shape_str(pool.second->shape()) + " with strides " + shape_str(pool.second->strides()));
  check_dim(op, {"k", &k}, 3);
  check_same_shape(op, {"k", &k}, {"v", &v});
  check_size(op, {"k", &k}, 1, key_pool.size(2), "num_kv_heads, as key_pool " + shape_str(key_pool.shape()) + " has");
  check_size(op, {"k", &k}, 2, key_pool.size(3), "head_dim, as key_pool " + shape_str(key_pool.shape()) + " has");
  ZT_REQUIRE(slots.dtype() == DType::kI64, head() + "slots must be int64, got " + dtype_name(slots.dtype()));
  check_dim(op, {"slots", &slots}, 1);
  check_size(op, {"slots", &slots}, 0, k.size(0), "tokens, as k " + shape_str(k.shape()) + " has");
}

// head_dim contiguous, as both paths read rows; a copy otherwise.
Tensor rows_contiguous(const Tensor& t) { return t.size(2) <= 1 || t.stride(2) == 1 ? t : t.contiguous(); }

// On the CPU, which reads the slots, before anything is written.
void require_slots_in_pools(const Tensor& key_pool, const Tensor& slots_in) {
  const std::int64_t num_slots = key_pool.size(0) * key_pool.size(1);
  const Tensor slots = slots_in.contiguous();
  const std::int64_t* slot_of = slots.data<std::int64_t>();
  for (std::int64_t i = 0; i < slots.numel(); ++i)
    ZT_REQUIRE(slot_of[i] < num_slots, head() + "slots[" + std::to_string(i) + "] is " + std::to_string(slot_of[i]) +
                                           " but the pools have " + std::to_string(num_slots) + " slots (" +
                                           std::to_string(key_pool.size(0)) + " blocks of " +
                                           std::to_string(key_pool.size(1)) +
                                           " tokens); a slot is block * block_size + offset, negative to skip");
}

void write_cpu(Tensor& key_pool, Tensor& value_pool, const Tensor& k, const Tensor& v, const Tensor& slots_in) {
  const std::int64_t tokens = k.size(0), heads = k.size(1), dim = k.size(2);
  const std::size_t element = dtype_size(k.dtype()), row_bytes = static_cast<std::size_t>(dim) * element;
  const Tensor slots = slots_in.contiguous();
  const std::int64_t* slot_of = slots.data<std::int64_t>();
  auto* key_base = static_cast<char*>(key_pool.data_ptr());
  auto* value_base = static_cast<char*>(value_pool.data_ptr());
  const auto* k_base = static_cast<const char*>(k.data_ptr());
  const auto* v_base = static_cast<const char*>(v.data_ptr());
  for (std::int64_t i = 0; i < tokens; ++i) {
    if (slot_of[i] < 0) continue;
    for (std::int64_t h = 0; h < heads; ++h) {
      const std::size_t dst = static_cast<std::size_t>((slot_of[i] * heads + h) * dim) * element;
      std::memcpy(key_base + dst, k_base + (i * k.stride(0) + h * k.stride(1)) * static_cast<std::int64_t>(element),
                  row_bytes);
      std::memcpy(value_base + dst, v_base + (i * v.stride(0) + h * v.stride(1)) * static_cast<std::int64_t>(element),
                  row_bytes);
    }
  }
}

void write_cuda(Tensor& key_pool, Tensor& value_pool, const Tensor& k, const Tensor& v, const Tensor& slots_in) {
  DeviceGuard guard(key_pool.device().index);
  const Tensor slots = slots_in.contiguous();
  cuda::KvSlotWriteDims dims;
  dims.tokens = k.size(0);
  dims.num_kv_heads = static_cast<int>(k.size(1));
  dims.head_dim = static_cast<int>(k.size(2));
  dims.num_slots = key_pool.size(0) * key_pool.size(1);
  dims.k_token_stride = k.stride(0);
  dims.k_head_stride = k.stride(1);
  dims.v_token_stride = v.stride(0);
  dims.v_head_stride = v.stride(1);
  cuda::write_kv_slots(dims, k.data_ptr(), v.data_ptr(), slots.data<std::int64_t>(), key_pool.data_ptr(),
                       value_pool.data_ptr(), dtype_size(k.dtype()), current_stream());
}

cuda::RopeCacheWrite cache_write(const Tensor& v, const Tensor& slots, Tensor& key_pool, Tensor& value_pool) {
  return {v.data_ptr(),        v.stride(0),           slots.data<std::int64_t>(),
          key_pool.data_ptr(), value_pool.data_ptr(), key_pool.size(0) * key_pool.size(1)};
}

}  // namespace

void write_kv_slots(Tensor& key_pool, Tensor& value_pool, const Tensor& k_in, const Tensor& v_in, const Tensor& slots) {
  check_inputs(key_pool, value_pool, k_in, v_in, slots);
  if (k_in.numel() == 0) return;
  const Tensor k = rows_contiguous(k_in), v = rows_contiguous(v_in);
  if (key_pool.device().is_cuda()) {
    write_cuda(key_pool, value_pool, k, v, slots);
  } else {
    require_slots_in_pools(key_pool, slots);
    write_cpu(key_pool, value_pool, k, v, slots);
  }
}

void rope_and_write_kv_slots(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& positions,
                             const RopeConfig& rope, Tensor& key_pool, Tensor& value_pool, const Tensor& slots_in) {
  check_inputs(key_pool, value_pool, k, v, slots_in);
  if (key_pool.device().is_cpu()) require_slots_in_pools(key_pool, slots_in);
  if (!key_pool.device().is_cuda() || !heads_contiguous(v)) {
    rope_forward_inplace(q, k, positions, rope);
    write_kv_slots(key_pool, value_pool, k, v, slots_in);
    return;
  }
  DeviceGuard guard(key_pool.device().index);
  const Tensor slots = slots_in.contiguous();
  rope_forward_with_cache(q, k, q, k, positions, rope, cache_write(v, slots, key_pool, value_pool));
}

ContiguousQkv rope_and_write_kv_slots_copied(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& positions,
                                             const RopeConfig& rope, Tensor& key_pool, Tensor& value_pool,
                                             const Tensor& slots_in) {
  check_inputs(key_pool, value_pool, k, v, slots_in);
  if (!key_pool.device().is_cuda() || !heads_contiguous(v)) {
    ContiguousQkv out{rope_forward(q, positions, rope), rope_forward(k, positions, rope), v.contiguous()};
    write_kv_slots(key_pool, value_pool, out.k, out.v, slots_in);
    return out;
  }
  DeviceGuard guard(key_pool.device().index);
  const Tensor slots = slots_in.contiguous();
  ContiguousQkv out{Tensor::empty(q.shape(), q.dtype(), q.device()), Tensor::empty(k.shape(), k.dtype(), k.device()),
                    Tensor::empty(v.shape(), v.dtype(), v.device())};
  cuda::RopeCacheWrite cache = cache_write(v, slots, key_pool, value_pool);
  cache.v_out = out.v.data_ptr();
  cache.v_out_token_stride = out.v.stride(0);
  rope_forward_with_cache(q, k, out.q, out.k, positions, rope, cache);
  return out;
}

}  // namespace zt::ops
