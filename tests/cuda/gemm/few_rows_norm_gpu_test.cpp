// cuda/gemm/few_rows's residual add + RMSNorm prologue (FewRowsNorm) against what it replaces:
// cuda/norm's fused forward (the sum and the normalized rows) then the product of the normalized
// rows. The product, the SwiGLU epilogue and the RoPE epilogue's outputs, and the stored sum, bit
// for bit: the prologue sums each row's squares in the norm kernel's order and rounds as it does.
// Rows of 256, 896, 1536, 2560, 3072, 3584 and 4096 dims (the norm's row groups of 32, 64, 96 and
// 128 threads, one vector a thread or four; a 96-thread group leaves a block's last 32 threads
// without a row) and of 520 (a part vector group and a part step of K), x rows a stride apart,
// bfloat16 and float16,
// Qwen's and GLM's rounding, 1 to 32 rows, K split and not; outputs poisoned with NaN first.
// Then what it refuses: rows the norm kernel does not keep in one block's registers, a sum that
// overlaps what the blocks read, and missing or misaligned tensors. Last, the op a decode step
// calls (ops::few_rows_norm_swiglu) against rmsnorm_residual_forward then linear_swiglu_forward,
// and where it declines, writing nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cuda/gemm/few_rows/few_rows_gemm.cuh"
#include "cuda/norm/rmsnorm.cuh"
#include "ops/gemm/few_rows_product.h"
#include "ops/gemm/linear.h"
#include "ops/norm/rmsnorm.h"
#include "runtime/error.h"
#include "runtime/streams/current_stream.h"
#include "tensor/tensor.h"
#include "tests/common/test_util.h"

namespace zt::cuda {
namespace {

constexpr float kEps = 1e-6f;

struct NormCase {
  std::int64_t k, rows;
  DType dtype;
  bool round_normalized;
  int k_splits;
  std::int64_t row_stride;  // of x and the residual; k when they are contiguous

  std::string name() const {
    return "K " + std::to_string(k) + ", " + std::to_string(rows) + " rows of stride " + std::to_string(row_stride) +
           ", " + dtype_name(dtype) + (round_normalized ? ", Qwen's rounding" : ", GLM's rounding") + ", k_splits " +
           std::to_string(k_splits);
  }
};

Tensor random_tensor(const Shape& shape, std::uint64_t seed, DType dtype, double std) {
  return Tensor::normal(shape, seed, 0, 0.0, std, DType::kF32).to(dtype).to(Device::cuda());
}

Tensor poisoned(const Shape& shape, DType dtype) {
  return Tensor::full(shape, std::numeric_limits<double>::quiet_NaN(), dtype, Device::cuda());
}

std::vector<double> values(const Tensor& t) { return t.to(Device::cpu(), DType::kF32).to_vector(); }

// The layer's output x and the residual stream (rows row_stride apart), the norm's weight and
// a weight of n rows for the product.
struct Operands {
  Operands(const NormCase& c, std::int64_t n)
      : x(random_tensor({c.rows, c.row_stride}, 51, c.dtype, 1.0).narrow(1, 0, c.k)),
        residual(random_tensor({c.rows, c.row_stride}, 52, c.dtype, 4.0).narrow(1, 0, c.k)),
        norm_weight(random_tensor({c.k}, 53, c.dtype, 1.0)),
        weight(random_tensor({n, c.k}, 54, c.dtype, 0.05)) {}
  Tensor x, residual, norm_weight, weight;
};

// cuda/norm's fused forward: {the sum, the normalized rows}, both contiguous.
std::pair<Tensor, Tensor> norm_kernel(const NormCase& c, const Operands& o) {
  const Tensor x = o.x.contiguous(), residual = o.residual.contiguous();
  Tensor sum = poisoned({c.rows, c.k}, c.dtype), normed = poisoned({c.rows, c.k}, c.dtype);
  Tensor rstd = Tensor::empty({c.rows}, DType::kF32, Device::cuda());
  rmsnorm_forward({.x = x.data_ptr(),
                   .residual = residual.data_ptr(),
                   .weight = o.norm_weight.data_ptr(),
                   .y = normed.data_ptr(),
                   .sum = sum.data_ptr(),
                   .rstd = rstd.data<float>()},
                  c.dtype, c.rows, c.k, kEps, c.round_normalized, current_stream());
  return {sum, normed};
}

FewRowsGemmArgs product_args(const NormCase& c, const Tensor& x, std::int64_t row_stride, const Tensor& weight,
                             const Tensor& y, FewRowsOutput output) {
  return {.rows = c.rows,
          .in_features = c.k,
          .out_features = weight.size(0),
          .x = x.data_ptr(),
          .x_row_stride = row_stride,
          .weight = weight.data_ptr(),
          .y = y.data_ptr(),
          .dtype = c.dtype,
          .output = output,
          .k_splits = c.k_splits};
}

FewRowsGemmArgs fused_args(const NormCase& c, const Operands& o, const Tensor& y, const Tensor& sum,
                           FewRowsOutput output) {
  FewRowsGemmArgs args = product_args(c, o.x, c.row_stride, o.weight, y, output);
  args.norm = {.residual = o.residual.data_ptr(),
               .weight = o.norm_weight.data_ptr(),
               .sum = sum.data_ptr(),
               .eps = kEps,
               .round_normalized = c.round_normalized};
  return args;
}

void expect_prologue_equals_norm_then_product(const NormCase& c, FewRowsOutput output) {
  const std::int64_t n = 192;  // three column tiles, of a linear's columns or of SwiGLU's pairs
  const Operands o(c, n);
  const auto [sum, normed] = norm_kernel(c, o);
  const std::int64_t columns = output == FewRowsOutput::kSwiglu ? n / 2 : n;
  Tensor expected = poisoned({c.rows, columns}, c.dtype);
  few_rows_gemm(product_args(c, normed, c.k, o.weight, expected, output), current_stream());

  Tensor fused = poisoned({c.rows, columns}, c.dtype), fused_sum = poisoned({c.rows, c.k}, c.dtype);
  few_rows_gemm(fused_args(c, o, fused, fused_sum, output), current_stream());
  const std::string what = c.name() + (output == FewRowsOutput::kSwiglu ? ", SwiGLU" : ", linear");
  EXPECT_EQ(values(fused), values(expected)) << what;
  EXPECT_EQ(values(fused_sum), values(sum)) << what << ": the sum";
}

TEST(FewRowsNormGpu, ThePrologueEqualsTheNormKernelThenTheProduct) {
  ZT_SKIP_WITHOUT_GPU();
  for (std::int64_t k : {256, 896, 1536, 2560, 3072, 3584, 4096, 520})
    for (DType dtype : {DType::kBF16, DType::kF16})
      for (std::int64_t rows : {1, 5, 16, 17, 32})
        for (bool round_normalized : {true, false})
          for (int k_splits : {1, 0}) {
            const NormCase c{k, rows, dtype, round_normalized, k_splits, k == 1536 && rows == 5 ? k + 64 : k};
            for (FewRowsOutput output : {FewRowsOutput::kLinear, FewRowsOutput::kSwiglu})
              ASSERT_NO_FATAL_FAILURE(expect_prologue_equals_norm_then_product(c, output));
          }
}

// The prologue in front of the RoPE epilogue (a decode step's q/k/v): y, and both pools, as the
// norm kernel then the RoPE epilogue leave them. 4:2 heads of 128 dims.
TEST(FewRowsNormGpu, ThePrologueComposesWithTheRopeEpilogue) {
  ZT_SKIP_WITHOUT_GPU();
  const std::int64_t q_heads = 4, kv_heads = 2, head_dim = 128, n = (q_heads + 2 * kv_heads) * head_dim;
  for (std::int64_t rows : {1, 8, 32}) {
    const NormCase c{1536, rows, DType::kBF16, true, 0, 1536};
    const Operands o(c, n);
    std::vector<double> positions, slots, frequencies;
    for (std::int64_t r = 0; r < rows; ++r) {
      positions.push_back(static_cast<double>(r * 131 + 7));
      slots.push_back(static_cast<double>(r * 2 + 1));
    }
    for (std::int64_t i = 0; i < head_dim / 2; ++i) frequencies.push_back(1.0 / std::pow(10000.0, 2.0 * i / head_dim));
    const Tensor positions_t = Tensor::from_values(positions, {rows}, DType::kI64).to(Device::cuda());
    const Tensor slots_t = Tensor::from_values(slots, {rows}, DType::kI64).to(Device::cuda());
    const Tensor inv_freq = Tensor::from_values(frequencies, {head_dim / 2}, DType::kF32).to(Device::cuda());
    const Shape pool_shape{2 * rows + 2, kv_heads, head_dim};
    auto with_rope = [&](FewRowsGemmArgs args, const Tensor& keys, const Tensor& values_pool) {
      args.rope = {.head_dim = head_dim,
                   .q_heads = q_heads,
                   .kv_heads = kv_heads,
                   .positions = positions_t.data<std::int64_t>(),
                   .inv_freq = inv_freq.data<float>(),
                   .slots = slots_t.data<std::int64_t>(),
                   .key_pool = keys.data_ptr(),
                   .value_pool = values_pool.data_ptr(),
                   .num_slots = pool_shape[0]};
      return args;
    };
    const auto [expected_sum, normed] = norm_kernel(c, o);
    Tensor expected = poisoned({rows, n}, c.dtype), keys = Tensor::zeros(pool_shape, c.dtype, Device::cuda()),
           vals = Tensor::zeros(pool_shape, c.dtype, Device::cuda());
    few_rows_gemm(with_rope(product_args(c, normed, c.k, o.weight, expected, FewRowsOutput::kRopeQkv), keys, vals),
                  current_stream());
    Tensor fused = poisoned({rows, n}, c.dtype), sum = poisoned({rows, c.k}, c.dtype),
           fused_keys = Tensor::zeros(pool_shape, c.dtype, Device::cuda()),
           fused_vals = Tensor::zeros(pool_shape, c.dtype, Device::cuda());
    few_rows_gemm(with_rope(fused_args(c, o, fused, sum, FewRowsOutput::kRopeQkv), fused_keys, fused_vals),
                  current_stream());
    EXPECT_EQ(values(fused), values(expected)) << rows << " rows";
    EXPECT_EQ(values(sum), values(expected_sum)) << rows << " rows: the sum";
    EXPECT_EQ(values(fused_keys), values(keys)) << rows << " rows: the key pool";
    EXPECT_EQ(values(fused_vals), values(vals)) << rows << " rows: the value pool";
  }
}

TEST(FewRowsNormGpu, WhatThePrologueCannotTakeIsRefused) {
  ZT_SKIP_WITHOUT_GPU();
  const NormCase c{1536, 4, DType::kBF16, true, 0, 1536};
  const Operands o(c, 128);
  Tensor y = Tensor::zeros({c.rows, 128}, c.dtype, Device::cuda()),
         sum = Tensor::zeros({c.rows, c.k}, c.dtype, Device::cuda());
  const FewRowsGemmArgs good = fused_args(c, o, y, sum, FewRowsOutput::kLinear);
  EXPECT_TRUE(few_rows_gemm_takes(good));

  // 8,200 dims: the norm kernel's row group would be 288 threads.
  const NormCase wide{8200, 4, DType::kBF16, true, 0, 8200};
  const Operands wide_operands(wide, 128);
  Tensor wide_sum = Tensor::zeros({wide.rows, wide.k}, wide.dtype, Device::cuda());
  std::vector<std::pair<FewRowsGemmArgs, std::string>> refused{
      {fused_args(wide, wide_operands, y, wide_sum, FewRowsOutput::kLinear), "8,200 dims"}};
  FewRowsGemmArgs onto_residual = good;
  onto_residual.norm.sum = const_cast<void*>(good.norm.residual);
  refused.emplace_back(onto_residual, "the sum written over the residual");
  FewRowsGemmArgs onto_residual_y = good;
  onto_residual_y.y = const_cast<void*>(good.norm.residual);
  refused.emplace_back(onto_residual_y, "y written over the residual");
  FewRowsGemmArgs no_weight = good;
  no_weight.norm.weight = nullptr;
  refused.emplace_back(no_weight, "no norm weight");
  FewRowsGemmArgs misaligned = good;
  misaligned.norm.residual = static_cast<const char*>(good.norm.residual) + 2;
  refused.emplace_back(misaligned, "a residual off a 16-byte boundary");
  for (const auto& [args, why] : refused) {
    EXPECT_FALSE(few_rows_gemm_takes(args)) << why;
    try {
      few_rows_gemm(args, current_stream());
      ADD_FAILURE() << "taken: " << why;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("for a norm"), std::string::npos) << e.what();
    }
  }
}

TEST(FewRowsNormGpu, TheNormSwigluOpEqualsTheNormThenLinearSwiglu) {
  ZT_SKIP_WITHOUT_GPU();
  for (DType dtype : {DType::kBF16, DType::kF16})
    for (ops::RmsNormStyle style : {ops::RmsNormStyle::kQwen, ops::RmsNormStyle::kGlm})
      for (std::int64_t rows : {1, 5, 32}) {
        const NormCase c{1536, rows, dtype, style == ops::RmsNormStyle::kQwen, 0, 1536};
        const std::string name = c.name();
        const Operands o(c, 2 * 384);
        const Tensor bias = random_tensor({2 * 384}, 55, dtype, 0.5);
        ops::FewRowsGemmScope every_product(ops::FewRowsProducts::kAll);
        const ops::NormPrologue norm{o.residual, o.norm_weight, poisoned({rows, c.k}, dtype), kEps, style};
        const std::optional<Tensor> y = ops::few_rows_norm_swiglu(o.x, norm, o.weight, bias);
        ASSERT_TRUE(y.has_value()) << name;
        const ops::RmsNormResidualOutput normed =
            ops::rmsnorm_residual_forward(o.x, o.residual, o.norm_weight, kEps, style);
        EXPECT_EQ(values(norm.sum), values(normed.sum)) << name;
        EXPECT_EQ(values(*y), values(ops::linear_swiglu_forward(normed.y, o.weight, bias))) << name;
      }
}

TEST(FewRowsNormGpu, TheNormSwigluOpDeclinesWritingNothing) {
  ZT_SKIP_WITHOUT_GPU();
  const NormCase c{1536, 4, DType::kBF16, true, 0, 1536};
  const Operands o(c, 2 * 384);
  auto expect_declined = [&](const ops::NormPrologue& norm, const std::string& why) {
    EXPECT_FALSE(ops::few_rows_norm_swiglu(o.x, norm, o.weight, Tensor())) << why;
    for (double v : values(norm.sum)) ASSERT_TRUE(std::isnan(v)) << why << ": the sum was written";
  };
  const ops::NormPrologue norm{o.residual, o.norm_weight, poisoned({c.rows, c.k}, c.dtype), kEps,
                               ops::RmsNormStyle::kQwen};
  expect_declined(norm, "outside a scope");
  {
    ops::FewRowsGemmScope swiglu_only(ops::FewRowsProducts::kSwiglu);
    expect_declined(norm, "in a scope of the SwiGLU products only");
  }
  ops::FewRowsGemmScope every_product(ops::FewRowsProducts::kAll);
  ops::NormPrologue short_residual = norm;
  short_residual.residual = o.residual.narrow(0, 0, c.rows - 1);
  expect_declined(short_residual, "a residual of fewer rows");
  ops::NormPrologue other_dtype = norm;
  other_dtype.weight = o.norm_weight.to(DType::kF16);
  expect_declined(other_dtype, "a norm weight of another dtype");
  ops::NormPrologue strided_sum = norm;
  strided_sum.sum = poisoned({c.rows, 2 * c.k}, c.dtype).narrow(1, 0, c.k);
  expect_declined(strided_sum, "a sum a stride apart");
}

}  // namespace
}  // namespace zt::cuda
