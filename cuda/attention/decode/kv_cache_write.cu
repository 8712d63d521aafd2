// One thread per (token, kv head, unit) with a grid-stride loop, a unit being 16 bytes when
// every pointer, row and stride is 16-byte aligned and one element otherwise. Threads of a
// token read its slot (the same address, one transaction) and copy their unit of k and of v.
#include "cuda/attention/decode/kv_cache_write.cuh"

#include <string>

#include "cuda/common/cuda_common.cuh"
#include "cuda/common/vector_io.cuh"
#include "runtime/check.h"
#include "runtime/error.h"

namespace zt::cuda {
namespace {

constexpr int kThreads = 256;

// Strides and sizes of one launch in units of Unit.
struct UnitLayout {
  std::int64_t row_units;  // units per head row
  std::int64_t k_token, k_head, v_token, v_head;
};

template <typename Unit>
__global__ void __launch_bounds__(kThreads)
    write_kv_slots_kernel(KvSlotWriteDims d, UnitLayout u, const Unit* k, const Unit* v, const std::int64_t* slots,
                          Unit* key_pool, Unit* value_pool) {
  const std::int64_t per_token = d.num_kv_heads * u.row_units, total = d.tokens * per_token;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t token = i / per_token, within = i - token * per_token;
    const std::int64_t head = within / u.row_units, unit = within - head * u.row_units;
    const std::int64_t slot = slots[token];
    if (slot < 0 || slot >= d.num_slots) continue;
    const std::int64_t at = (slot * d.num_kv_heads + head) * u.row_units + unit;
    key_pool[at] = k[token * u.k_token + head * u.k_head + unit];
    value_pool[at] = v[token * u.v_token + head * u.v_head + unit];
  }
}

template <typename Unit>
void launch(const KvSlotWriteDims& dims, std::size_t element_bytes, const void* k, const void* v,
            const std::int64_t* slots, void* key_pool, void* value_pool, cudaStream_t stream) {
  const auto ratio = static_cast<std::int64_t>(sizeof(Unit) / element_bytes);
  const UnitLayout u{dims.head_dim / ratio, dims.k_token_stride / ratio, dims.k_head_stride / ratio,
                     dims.v_token_stride / ratio, dims.v_head_stride / ratio};
  const std::int64_t total = dims.tokens * dims.num_kv_heads * u.row_units;
  write_kv_slots_kernel<Unit><<<grid_size(total, kThreads), kThreads, 0, stream>>>(
      dims, u, static_cast<const Unit*>(k), static_cast<const Unit*>(v), slots, static_cast<Unit*>(key_pool),
      static_cast<Unit*>(value_pool));
}

// Whether 16-byte units cover every row: all pointers aligned, and rows and strides whole units.
bool whole_vectors(const KvSlotWriteDims& d, std::size_t element_bytes, std::initializer_list<const void*> pointers) {
  for (const void* p : pointers)
    if (!is_aligned(p, 16)) return false;
  const auto ratio = static_cast<std::int64_t>(16 / element_bytes);
  return d.head_dim % ratio == 0 && d.k_token_stride % ratio == 0 && d.k_head_stride % ratio == 0 &&
         d.v_token_stride % ratio == 0 && d.v_head_stride % ratio == 0;
}

}  // namespace

void write_kv_slots(const KvSlotWriteDims& dims, const void* k, const void* v, const std::int64_t* slots,
                    void* key_pool, void* value_pool, std::size_t element_bytes, cudaStream_t stream) {
  if (dims.tokens == 0 || dims.num_kv_heads == 0 || dims.head_dim == 0) return;
  ZT_REQUIRE(element_bytes == 2 || element_bytes == 4 || element_bytes == 8,
             "write_kv_slots kernel: elements of " + std::to_string(element_bytes) + " bytes; it copies 2, 4 or 8");
  if (whole_vectors(dims, element_bytes, {k, v, key_pool, value_pool}))
    launch<uint4>(dims, element_bytes, k, v, slots, key_pool, value_pool, stream);
  else if (element_bytes == 2)
    launch<std::uint16_t>(dims, element_bytes, k, v, slots, key_pool, value_pool, stream);
  else if (element_bytes == 4)
    launch<std::uint32_t>(dims, element_bytes, k, v, slots, key_pool, value_pool, stream);
  else
    launch<std::uint64_t>(dims, element_bytes, k, v, slots, key_pool, value_pool, stream);
  ZT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace zt::cuda
