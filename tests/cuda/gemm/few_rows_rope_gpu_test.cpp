// cuda/gemm/few_rows's RoPE + KV-cache epilogue (FewRowsOutput::kRopeQkv) against what it
// replaces: the linear kernel's product of the same joined [q; k; v] weight, then
// ops::rope_and_write_kv_slots (the paged cache's RoPE and write in one launch). y's q and k
// (rotated) and v, and both pools, bit for bit: the sums are the same and the rotation is the
// same code. Heads of 64, 128 and 256 dims, GQA and MQA, bfloat16 and float16, 1 to 32 rows,
// with and without a bias, K split and not; the positions far apart, one row's slot negative (its
// token skipped) and the pools' other rows left as they were. Then the shapes it refuses.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "cuda/gemm/few_rows/few_rows_gemm.cuh"
#include "ops/attention/kv_cache_write.h"
#include "ops/rope/rope.h"
#include "runtime/error.h"
#include "runtime/streams/current_stream.h"
#include "tests/common/test_util.h"

namespace zt::cuda {
namespace {

struct Heads {
  std::int64_t q, kv, dim;
};

const ops::RopeConfig kRope{ops::RopeStyle::kRotateHalf, 1000000.0, 1.0};
constexpr std::int64_t kBlockSize = 4;

struct RopeCase {
  Heads heads;
  DType dtype;
  std::int64_t rows;
  bool with_bias;
  int k_splits;

  std::string name() const {
    return std::to_string(heads.q) + ":" + std::to_string(heads.kv) + " heads of " + std::to_string(heads.dim) + " " +
           dtype_name(dtype) + " " + std::to_string(rows) + " rows" + (with_bias ? " bias" : "") + " k_splits " +
           std::to_string(k_splits);
  }
};

// The step's inputs and the cache, on the GPU.
struct Operands {
  Tensor x, weight, bias, positions, slots, inv_freq;
  std::int64_t num_slots;

  explicit Operands(const RopeCase& c) {
    const std::int64_t k = 520, n = (c.heads.q + 2 * c.heads.kv) * c.heads.dim;
    x = Tensor::normal({c.rows, k}, 41, 0, 0.0, 1.0, DType::kF32).to(c.dtype).to(Device::cuda());
    weight = Tensor::normal({n, k}, 42, 0, 0.0, 0.05, DType::kF32).to(c.dtype).to(Device::cuda());
    if (c.with_bias) bias = Tensor::normal({n}, 43, 0, 0.0, 1.0, DType::kF32).to(c.dtype).to(Device::cuda());
    num_slots = (3 * c.rows + 4 + kBlockSize - 1) / kBlockSize * kBlockSize;
    std::vector<double> position_values, slot_values;
    for (std::int64_t r = 0; r < c.rows; ++r) {
      position_values.push_back(static_cast<double>(r * 977 + 3));
      slot_values.push_back(r == 1 ? -1.0 : static_cast<double>((r * 3 + 2) % num_slots));
    }
    positions = Tensor::from_values(position_values, {c.rows}, DType::kI64).to(Device::cuda());
    slots = Tensor::from_values(slot_values, {c.rows}, DType::kI64).to(Device::cuda());
    const ops::GpuRope rope = ops::gpu_rope("few_rows_rope_gpu_test", c.heads.dim, kRope);
    const std::vector<double> frequencies(rope.frequencies.inv_freq, rope.frequencies.inv_freq + c.heads.dim / 2);
    inv_freq = Tensor::from_values(frequencies, {c.heads.dim / 2}, DType::kF32).to(Device::cuda());
  }

  // [blocks, block_size, kv heads, head_dim], as the paged cache holds it.
  Tensor pool(const RopeCase& c, double value) const {
    return Tensor::full({num_slots / kBlockSize, kBlockSize, c.heads.kv, c.heads.dim}, value, c.dtype, Device::cuda());
  }
};

FewRowsGemmArgs product_args(const RopeCase& c, const Operands& o, const Tensor& y) {
  return {.rows = c.rows,
          .in_features = o.x.size(1),
          .out_features = o.weight.size(0),
          .x = o.x.data_ptr(),
          .x_row_stride = o.x.stride(0),
          .weight = o.weight.data_ptr(),
          .bias = o.bias.defined() ? o.bias.data_ptr() : nullptr,
          .y = y.data_ptr(),
          .dtype = c.dtype,
          .k_splits = c.k_splits};
}

// The product of `o` with the RoPE epilogue into y and the pools `keys` and `values`.
FewRowsGemmArgs rope_args(const RopeCase& c, const Operands& o, const Tensor& y, const Tensor& keys,
                          const Tensor& values) {
  FewRowsGemmArgs args = product_args(c, o, y);
  args.output = FewRowsOutput::kRopeQkv;
  args.rope = {.head_dim = c.heads.dim,
               .q_heads = c.heads.q,
               .kv_heads = c.heads.kv,
               .positions = o.positions.data<std::int64_t>(),
               .inv_freq = o.inv_freq.data<float>(),
               .slots = o.slots.data<std::int64_t>(),
               .key_pool = keys.data_ptr(),
               .value_pool = values.data_ptr(),
               .num_slots = o.num_slots};
  return args;
}

std::vector<double> values(const Tensor& t) { return t.to(Device::cpu(), DType::kF32).to_vector(); }

void expect_epilogue_equals_product_then_rope(const RopeCase& c) {
  const Operands o(c);
  const Heads h = c.heads;
  const std::int64_t n = o.weight.size(0);
  const double nan = std::numeric_limits<double>::quiet_NaN();

  Tensor product = Tensor::full({c.rows, n}, nan, c.dtype, Device::cuda());
  few_rows_gemm(product_args(c, o, product), current_stream());
  Tensor key_pool = o.pool(c, 1.5), value_pool = o.pool(c, -2.5);
  const Tensor q = product.narrow(1, 0, h.q * h.dim).reshape({c.rows, h.q, h.dim});
  const Tensor k = product.narrow(1, h.q * h.dim, h.kv * h.dim).reshape({c.rows, h.kv, h.dim});
  const Tensor v = product.narrow(1, (h.q + h.kv) * h.dim, h.kv * h.dim).reshape({c.rows, h.kv, h.dim});
  ops::rope_and_write_kv_slots(q, k, v, o.positions, kRope, key_pool, value_pool, o.slots);

  Tensor fused = Tensor::full({c.rows, n}, nan, c.dtype, Device::cuda());
  Tensor fused_keys = o.pool(c, 1.5), fused_values = o.pool(c, -2.5);
  few_rows_gemm(rope_args(c, o, fused, fused_keys, fused_values), current_stream());

  const std::string what = c.name();
  EXPECT_EQ(values(fused.narrow(1, 0, h.q * h.dim)), values(q)) << what << ": q";
  EXPECT_EQ(values(fused.narrow(1, h.q * h.dim, h.kv * h.dim)), values(k)) << what << ": k";
  EXPECT_EQ(values(fused.narrow(1, (h.q + h.kv) * h.dim, h.kv * h.dim)), values(v)) << what << ": v";
  EXPECT_EQ(values(fused_keys), values(key_pool)) << what << ": the key pool";
  EXPECT_EQ(values(fused_values), values(value_pool)) << what << ": the value pool";
}

TEST(FewRowsRopeGpu, TheEpilogueEqualsTheProductThenRopeAndTheCacheWrite) {
  ZT_SKIP_WITHOUT_GPU();
  for (Heads heads : {Heads{4, 2, 64}, Heads{3, 1, 128}, Heads{2, 1, 256}})
    for (DType dtype : {DType::kBF16, DType::kF16})
      for (std::int64_t rows : {1, 8, 32})
        for (bool with_bias : {false, true})
          for (int k_splits : {1, 3, 0})
            ASSERT_NO_FATAL_FAILURE(
                expect_epilogue_equals_product_then_rope({heads, dtype, rows, with_bias, k_splits}));
}

// Heads that are not whole 64-row tiles, heads that do not make W's rows, and a missing pool are
// refused with what it takes.
TEST(FewRowsRopeGpu, WhatTheEpilogueCannotTakeIsRefused) {
  ZT_SKIP_WITHOUT_GPU();
  const RopeCase c{{2, 1, 64}, DType::kBF16, 4, false, 0};
  const Operands o(c);
  Tensor y = Tensor::zeros({c.rows, o.weight.size(0)}, c.dtype, Device::cuda());
  Tensor keys = o.pool(c, 0.0), vals = o.pool(c, 0.0);
  FewRowsGemmArgs args = rope_args(c, o, y, keys, vals);
  const FewRowsRope good = args.rope;
  EXPECT_TRUE(few_rows_gemm_takes(args));
  FewRowsRope odd_dim = good;
  odd_dim.head_dim = 32;
  odd_dim.q_heads = 4;
  odd_dim.kv_heads = 2;  // 8 heads of 32 dims make the 256 rows, but not whole tiles of a head
  FewRowsRope wrong_heads = good;
  wrong_heads.q_heads = 3;
  FewRowsRope no_pool = good;
  no_pool.value_pool = nullptr;
  for (const FewRowsRope& bad : {odd_dim, wrong_heads, no_pool}) {
    args.rope = bad;
    EXPECT_FALSE(few_rows_gemm_takes(args));
    try {
      few_rows_gemm(args, current_stream());
      ADD_FAILURE() << "taken: " << bad.q_heads << ":" << bad.kv_heads << " heads of " << bad.head_dim;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("for RoPE, heads of 64 to 256"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace zt::cuda
