// infer/paged_kv_cache.h's attend_projected on the GPU (a decode step's q/k/v product, RoPE and
// cache write as one launch of the few-row kernel) against what it replaces: the same product
// through linear_forward in the same scope, then attend_unrotated. Two caches hold the same
// prefill; after one decode step each way the attention and both pools agree bit for bit.
// Heads of 64 and 128 dims, GQA, bfloat16 and float16, with and without a q/k/v bias, three
// sequences whose tokens land in different blocks. Then where it declines, doing nothing:
// outside a scope of every product, GLM's half-rotary interleaved heads, heads of 48 dims,
// a prefill, and the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "infer/paged_kv_cache.h"
#include "ops/gemm/few_rows_product.h"
#include "ops/gemm/linear.h"
#include "tests/common/test_util.h"

namespace zt::infer {
namespace {

constexpr std::int64_t kHidden = 256;
constexpr std::int64_t kBlocks = 12;
constexpr std::int64_t kBlockSize = 16;
const std::vector<std::int64_t> kPrompts = {5, 17, 30};

models::ModelConfig config_of(std::int64_t head_dim, ops::RopeConfig rope = {ops::RopeStyle::kRotateHalf, 1e6, 1.0}) {
  models::ModelConfig c;
  c.num_layers = 1;
  c.hidden_size = kHidden;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = head_dim;
  c.rope = rope;
  return c;
}

Tensor random(const Shape& shape, std::uint64_t seed, DType dtype, double std = 1.0) {
  return Tensor::normal(shape, seed, 0, 0.0, std, DType::kF32).to(dtype).to(Device::cuda());
}

Tensor integers(const std::vector<double>& values, DType dtype) {
  return Tensor::from_values(values, {static_cast<std::int64_t>(values.size())}, dtype).to(Device::cuda());
}

double scale_of(const models::ModelConfig& c) { return 1.0 / std::sqrt(static_cast<double>(c.head_dim)); }

// A cache holding the three sequences' prompts (the same keys and values in every cache made
// with the same arguments), set up for one decode step of one token each.
struct FilledCache {
  FilledCache(const models::ModelConfig& c, DType dtype) : cache(c, kBlocks, kBlockSize, dtype, Device::cuda()) {
    for (Tensor pool : {cache.key_pool(0), cache.value_pool(0)}) pool.zero_();  // unused slots compare equal
    std::vector<double> positions, offsets{0.0};
    std::int64_t tokens = 0;
    for (std::size_t s = 0; s < kPrompts.size(); ++s) {
      EXPECT_TRUE(cache.try_add(static_cast<SequenceId>(s), 64)) << "sequence " << s;
      for (std::int64_t t = 0; t < kPrompts[s]; ++t) positions.push_back(static_cast<double>(t));
      tokens += kPrompts[s];
      offsets.push_back(static_cast<double>(tokens));
    }
    cache.set_batch({0, 1, 2}, kPrompts);
    cache.begin_forward(c, {tokens, 3, 30});
    cache.attend_unrotated(0, random({tokens, c.num_heads, c.head_dim}, 1, dtype),
                           random({tokens, c.num_kv_heads, c.head_dim}, 2, dtype),
                           random({tokens, c.num_kv_heads, c.head_dim}, 3, dtype), integers(positions, DType::kI64),
                           c.rope, integers(offsets, DType::kI32), scale_of(c));
    cache.end_forward();
    cache.set_batch({0, 1, 2}, {1, 1, 1});
    cache.begin_forward(c, {3, 3, 1});
  }
  PagedKvCache cache;
};

// The decode step's inputs: x, the joined weight and bias, the rows' positions and offsets.
struct Step {
  Step(const models::ModelConfig& c, DType dtype, bool with_bias)
      : x(random({3, kHidden}, 4, dtype)),
        weight(random({c.q_size() + 2 * c.kv_size(), kHidden}, 5, dtype, 0.05)),
        bias(with_bias ? random({c.q_size() + 2 * c.kv_size()}, 6, dtype) : Tensor()),
        positions(integers({5, 17, 30}, DType::kI64)),
        cu_seqlens(integers({0, 1, 2, 3}, DType::kI32)) {}
  Tensor x, weight, bias, positions, cu_seqlens;
};

std::vector<double> host(const Tensor& t) { return t.to(Device::cpu(), DType::kF32).to_vector(); }

TEST(PagedKvCacheGpu, AProjectedDecodeStepEqualsTheProductThenAttendUnrotated) {
  ZT_SKIP_WITHOUT_GPU();
  for (DType dtype : {DType::kBF16, DType::kF16})
    for (std::int64_t head_dim : {64, 128})
      for (bool with_bias : {false, true}) {
        const std::string name = dtype_name(dtype) + std::string(" heads of ") + std::to_string(head_dim) +
                                 (with_bias ? " with a bias" : "");
        const models::ModelConfig c = config_of(head_dim);
        const Step step(c, dtype, with_bias);
        FilledCache fused(c, dtype), plain(c, dtype);
        ops::FewRowsGemmScope every_product(ops::FewRowsProducts::kAll);
        const std::optional<Tensor> attended = fused.cache.attend_projected(
            0, step.x, step.weight, step.bias, step.positions, step.cu_seqlens, scale_of(c));
        ASSERT_TRUE(attended.has_value()) << name;
        const Tensor qkv = ops::linear_forward(step.x, step.weight, step.bias);
        auto heads = [&](std::int64_t first, std::int64_t size) {
          return qkv.narrow(1, first, size).view({3, size / head_dim, head_dim});
        };
        const Tensor expected = plain.cache.attend_unrotated(0, heads(0, c.q_size()), heads(c.q_size(), c.kv_size()),
                                                             heads(c.q_size() + c.kv_size(), c.kv_size()),
                                                             step.positions, c.rope, step.cu_seqlens, scale_of(c));
        EXPECT_EQ(attended->shape(), expected.shape()) << name;
        EXPECT_EQ(host(*attended), host(expected)) << name;
        EXPECT_EQ(host(fused.cache.key_pool(0)), host(plain.cache.key_pool(0))) << name << ": keys";
        EXPECT_EQ(host(fused.cache.value_pool(0)), host(plain.cache.value_pool(0))) << name << ": values";
      }
}

// nullopt, and the pools as they were.
void expect_declined(FilledCache& filled, const models::ModelConfig& c, const Step& step, const std::string& why) {
  const std::vector<double> keys = host(filled.cache.key_pool(0)), values = host(filled.cache.value_pool(0));
  EXPECT_FALSE(
      filled.cache.attend_projected(0, step.x, step.weight, step.bias, step.positions, step.cu_seqlens, scale_of(c)))
      << why;
  EXPECT_EQ(host(filled.cache.key_pool(0)), keys) << why;
  EXPECT_EQ(host(filled.cache.value_pool(0)), values) << why;
}

TEST(PagedKvCacheGpu, AProjectedStepIsDeclinedWhereTheKernelDoesNotApply) {
  ZT_SKIP_WITHOUT_GPU();
  const DType dtype = DType::kBF16;
  {
    const models::ModelConfig c = config_of(64);
    FilledCache filled(c, dtype);
    expect_declined(filled, c, Step(c, dtype, true), "outside a scope");
    ops::FewRowsGemmScope only_swiglu(ops::FewRowsProducts::kSwigluAndLongK);
    expect_declined(filled, c, Step(c, dtype, true), "in a scope of the SwiGLU and long-K products");
  }
  ops::FewRowsGemmScope every_product(ops::FewRowsProducts::kAll);
  for (const auto& [c, why] : {std::pair{config_of(128, {ops::RopeStyle::kInterleaved, 10000.0, 0.5}), "GLM's heads"},
                               std::pair{config_of(48), "heads of 48 dims"}}) {
    FilledCache filled(c, dtype);
    expect_declined(filled, c, Step(c, dtype, false), why);
  }
  const models::ModelConfig c = config_of(64);
  PagedKvCache prefilling(c, kBlocks, kBlockSize, dtype, Device::cuda());
  ASSERT_TRUE(prefilling.try_add(0, 64));
  prefilling.set_batch({0}, {3});
  prefilling.begin_forward(c, {3, 1, 3});
  const Step step(c, dtype, false);
  EXPECT_FALSE(prefilling.attend_projected(0, step.x, step.weight, step.bias, step.positions,
                                           integers({0, 3}, DType::kI32), scale_of(c)))
      << "a prefill";
}

TEST(PagedKvCacheGpu, AProjectedStepIsDeclinedOnTheCpu) {
  const models::ModelConfig c = config_of(64);
  PagedKvCache cache(c, kBlocks, kBlockSize, DType::kBF16, Device::cpu());
  ASSERT_TRUE(cache.try_add(0, 8));
  cache.set_batch({0}, {1});
  cache.begin_forward(c, {1, 1, 1});
  ops::FewRowsGemmScope every_product(ops::FewRowsProducts::kAll);
  const Tensor x = Tensor::zeros({1, kHidden}, DType::kBF16);
  const Tensor weight = Tensor::zeros({c.q_size() + 2 * c.kv_size(), kHidden}, DType::kBF16);
  const Tensor positions = Tensor::from_values({0.0}, {1}, DType::kI64);
  const Tensor cu_seqlens = Tensor::from_values({0.0, 1.0}, {2}, DType::kI32);
  EXPECT_FALSE(cache.attend_projected(0, x, weight, Tensor(), positions, cu_seqlens, scale_of(c)));
}

}  // namespace
}  // namespace zt::infer
