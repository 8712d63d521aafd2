// The tensor-core attention kernels (cuda/attention/flash/flash_attention*.cu, reached through ops for
// bfloat16/float16 with head_dim 64, 96 or 128) against the CPU reference on fresh random
// inputs: forward out and lse, every gradient of both backward modes (atomic and deterministic
// dQ), on single sequences of 1 to 2049 tokens, packed batches of uneven lengths, MQA and GQA
// 8:1 and 2:1, prefixes of 16 and 3 rows, causal and full attention. New GPU tensors start as
// NaN, so any element a kernel forgets to write fails. Repeated runs are compared for races.
// The Tiny* tests are small enough to run under compute-sanitizer (memcheck, racecheck):
//   compute-sanitizer --tool racecheck flash_attention_gpu_test --gtest_filter='*Tiny*'
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cuda/attention/flash/flash_attention.cuh"
#include "ops/attention/attention.h"
#include "tests/common/op_test_util.h"
#include "tests/common/test_util.h"
#include "tests/ops/attention/attention_test_util.h"

namespace zt {
namespace {

using testing::AttentionCase;
using testing::AttentionTensors;
using testing::check_attention_against_cpu;

class FlashAttentionGpu : public testing::PoisonedGpuTest {};

const DType kHalfDtypes[] = {DType::kBF16, DType::kF16};
const std::int64_t kHeadDims[] = {64, 96, 128};

AttentionCase with_dim(AttentionCase c, std::int64_t head_dim) {
  c.head_dim = head_dim;
  return c;
}
AttentionCase deterministic(AttentionCase c) {
  c.deterministic = true;
  return c;
}

TEST(FlashAttentionRouting, TakesHalfDtypesWithSupportedHeadDims) {
  cuda::AttentionDims dims;
  dims.softmax_scale = 0.125f;
  for (int head_dim : {64, 96, 128}) {
    dims.head_dim = head_dim;
    EXPECT_TRUE(cuda::flash_attention_supported(dims, DType::kBF16, {nullptr})) << head_dim;
    EXPECT_TRUE(cuda::flash_attention_supported(dims, DType::kF16, {nullptr})) << head_dim;
    EXPECT_FALSE(cuda::flash_attention_supported(dims, DType::kF32, {nullptr})) << head_dim;
  }
  for (int head_dim : {5, 32, 80, 256}) {
    dims.head_dim = head_dim;
    EXPECT_FALSE(cuda::flash_attention_supported(dims, DType::kBF16, {nullptr})) << head_dim;
  }
  dims.head_dim = 128;
  alignas(16) static const unsigned char bytes[32] = {};
  EXPECT_FALSE(cuda::flash_attention_supported(dims, DType::kBF16, {bytes + 2})) << "a misaligned row start";
  EXPECT_TRUE(cuda::flash_attention_supported(dims, DType::kBF16, {bytes + 16}));
  dims.softmax_scale = 0.0f;
  EXPECT_FALSE(cuda::flash_attention_supported(dims, DType::kBF16, {nullptr})) << "a zero scale";
}

TEST_F(FlashAttentionGpu, SingleSequencesOfAwkwardLengths) {
  ZT_SKIP_WITHOUT_GPU();
  std::uint64_t seed = 1000;
  for (std::int64_t length : {1, 17, 1000, 2049}) {
    check_attention_against_cpu({{length}, 4, 2, 128, 0, true}, DType::kBF16, seed += 20);
    check_attention_against_cpu(deterministic({{length}, 4, 2, 128, 0, true}), DType::kF16, seed += 20);
  }
  check_attention_against_cpu({{17}, 4, 2, 64, 0, false}, DType::kBF16, seed += 20);
  check_attention_against_cpu({{1000}, 2, 1, 64, 0, false}, DType::kF16, seed += 20);
  check_attention_against_cpu(deterministic({{1000}, 2, 2, 96, 0, false}), DType::kBF16, seed += 20);
}

TEST_F(FlashAttentionGpu, PackedUnevenBatchEveryHeadDimAndDtype) {
  ZT_SKIP_WITHOUT_GPU();
  const AttentionCase base{{1, 17, 130, 64, 1000}, 4, 2, 64, 0, true};
  std::uint64_t seed = 2000;
  for (std::int64_t head_dim : kHeadDims)
    for (DType dtype : kHalfDtypes)
      for (bool causal : {true, false}) {
        AttentionCase c = with_dim(base, head_dim);
        c.causal = causal;
        check_attention_against_cpu(c, dtype, seed += 20);
      }
  for (std::int64_t head_dim : kHeadDims)
    check_attention_against_cpu(deterministic(with_dim(base, head_dim)), DType::kBF16, seed += 20);
}

TEST_F(FlashAttentionGpu, GroupedAndMultiQueryHeads) {
  ZT_SKIP_WITHOUT_GPU();
  std::uint64_t seed = 3000;
  for (DType dtype : kHalfDtypes) {
    check_attention_against_cpu({{1, 17, 130, 64, 300}, 4, 1, 128, 0, true}, dtype, seed += 20);  // MQA
    check_attention_against_cpu({{1, 17, 130, 64, 300}, 16, 2, 64, 0, true}, dtype, seed += 20);  // GQA 8:1
    check_attention_against_cpu({{1, 17, 130, 64, 300}, 4, 2, 96, 0, false}, dtype, seed += 20);  // GQA 2:1
  }
  check_attention_against_cpu(deterministic({{130, 300}, 8, 1, 128, 0, true}), DType::kBF16, seed += 20);
  check_attention_against_cpu(deterministic({{130, 300}, 16, 2, 128, 3, false}), DType::kF16, seed += 20);
}

TEST_F(FlashAttentionGpu, PrefixesOfSixteenAndThreeRows) {
  ZT_SKIP_WITHOUT_GPU();
  std::uint64_t seed = 4000;
  for (std::int64_t prefix : {16, 3})
    for (DType dtype : kHalfDtypes)
      for (bool causal : {true, false}) {
        AttentionCase c{{1, 17, 130, 64, 200}, 4, 2, 128, prefix, causal};
        check_attention_against_cpu(c, dtype, seed += 20);
        check_attention_against_cpu(deterministic(with_dim(c, 64)), dtype, seed += 20);
      }
  // A long sequence whose prefix shifts every key tile off the query tiles' boundaries.
  check_attention_against_cpu({{1000}, 2, 1, 96, 3, true}, DType::kBF16, seed += 20);
  // An empty sequence: its prefix rows get zero gradient, written all the same.
  check_attention_against_cpu({{5, 0, 70}, 4, 2, 64, 16, true}, DType::kBF16, seed += 20);
  check_attention_against_cpu(deterministic({{5, 0, 70}, 4, 2, 128, 3, false}), DType::kF16, seed += 20);
}

// The forward and the deterministic backward must agree bitwise between runs; the atomic
// backward's dK, dV and prefix gradients too (each owned by one block), its dQ up to the order
// of fp32 additions; and the two modes' dQ must agree with each other.
TEST_F(FlashAttentionGpu, RepeatedRunsAgree) {
  ZT_SKIP_WITHOUT_GPU();
  for (std::int64_t head_dim : kHeadDims) {
    SCOPED_TRACE("head_dim " + std::to_string(head_dim));
    AttentionCase c{{70, 3, 129, 600}, 8, 2, head_dim, 3, true};
    AttentionTensors gpu = testing::on_gpu(testing::random_attention_inputs(c, DType::kBF16, 5000 + head_dim));
    auto forward = [&] { return ops::attention_forward(gpu.q, gpu.k, gpu.v, gpu.cu_seqlens, c.config(), gpu.prefix); };
    ops::AttentionOutput first = forward(), second = forward();
    testing::expect_bitwise_equal(first.out, second.out, "out");
    testing::expect_bitwise_equal(first.lse, second.lse, "lse");
    Tensor grad_out = Tensor::normal(gpu.q.shape(), 5100, 0, 0.0, 1.0, DType::kBF16, Device::cuda());
    auto backward = [&](bool is_deterministic) {
      ops::AttentionConfig config = c.config();
      config.deterministic = is_deterministic;
      return ops::attention_backward(grad_out, gpu.q, gpu.k, gpu.v, first.out, first.lse, gpu.cu_seqlens, config,
                                     gpu.prefix);
    };
    const ops::AttentionGrads exact_a = backward(true), exact_b = backward(true);
    const ops::AttentionGrads atomic_a = backward(false), atomic_b = backward(false);
    for (const auto& [a, b] : {std::pair{&exact_a, &exact_b}, std::pair{&atomic_a, &atomic_b}}) {
      testing::expect_bitwise_equal(b->grad_k, a->grad_k, "grad_k");
      testing::expect_bitwise_equal(b->grad_v, a->grad_v, "grad_v");
      testing::expect_bitwise_equal(b->grad_prefix_k, a->grad_prefix_k, "grad_prefix_k");
      testing::expect_bitwise_equal(b->grad_prefix_v, a->grad_prefix_v, "grad_prefix_v");
    }
    testing::expect_bitwise_equal(exact_b.grad_q, exact_a.grad_q, "deterministic grad_q");
    EXPECT_LE(relative_error(atomic_b.grad_q, atomic_a.grad_q), 2e-3) << "atomic grad_q between runs";
    EXPECT_LE(relative_error(atomic_a.grad_q, exact_a.grad_q), 1e-2) << "atomic against deterministic grad_q";
  }
}

// Shapes for the sanitizers: every kernel, tail rows and keys, a prefix, GQA, both modes.
TEST_F(FlashAttentionGpu, TinyShapesForSanitizers) {
  ZT_SKIP_WITHOUT_GPU();
  std::uint64_t seed = 6000;
  for (std::int64_t head_dim : kHeadDims) {
    check_attention_against_cpu({{1, 3, 20}, 2, 1, head_dim, 2, true}, DType::kBF16, seed += 20);
    check_attention_against_cpu(deterministic({{1, 3, 20}, 2, 1, head_dim, 2, false}), DType::kF16, seed += 20);
    check_attention_against_cpu({{130}, 2, 2, head_dim, 0, true}, DType::kBF16, seed += 20);
  }
}

}  // namespace
}  // namespace zt
