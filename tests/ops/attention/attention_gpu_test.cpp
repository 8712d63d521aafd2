// Attention's CUDA kernels against the CPU reference from the same inputs: float32 to 1e-5,
// bfloat16 and float16 to 1e-2, forward (out and lse) and backward (every gradient, prefix
// included), on awkward packed lengths, GQA/MQA, prefixes, head_dim 5 to 256 and long-ish
// sequences. New GPU tensors start as NaN, so any unwritten output element fails. 16-bit
// inputs with head_dim 64/96/128 take the tensor-core kernels (flash_attention_gpu_test.cpp
// tests them in depth), everything else the simple kernels.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ops/attention/attention.h"
#include "runtime/error.h"
#include "tests/common/op_test_util.h"
#include "tests/common/test_util.h"
#include "tests/ops/attention/attention_test_util.h"

namespace zt {
namespace {

using testing::AttentionCase;
using testing::AttentionTensors;

class AttentionGpu : public testing::PoisonedGpuTest {};

using testing::check_attention_against_cpu;
using testing::on_gpu;

const DType kGpuDtypes[] = {DType::kF32, DType::kBF16, DType::kF16};

TEST_F(AttentionGpu, MatchesCpuOnAwkwardPackedShapes) {
  ZT_SKIP_WITHOUT_GPU();
  const std::vector<AttentionCase> cases = {
      {{1, 7, 33, 130}, 4, 2, 64, 0, true}, {{1, 7, 33, 130}, 4, 2, 80, 3, false}, {{1}, 1, 1, 64, 0, true},
      {{17, 5, 1}, 8, 1, 128, 3, true},     // MQA with prefix
      {{3, 0, 4}, 4, 2, 5, 2, true},        // an empty sequence; head_dim below one lane chunk
      {{40, 9}, 2, 1, 256, 2, false},       // the largest head_dim
      {{16, 32, 48}, 6, 3, 128, 16, true},  // lengths on tile boundaries
  };
  std::uint64_t seed = 100;
  for (const AttentionCase& c : cases)
    for (DType dtype : kGpuDtypes) check_attention_against_cpu(c, dtype, seed += 20);
}

TEST_F(AttentionGpu, MatchesCpuOnLongSequences) {
  ZT_SKIP_WITHOUT_GPU();
  for (DType dtype : kGpuDtypes) check_attention_against_cpu({{300, 517}, 8, 2, 128, 0, true}, dtype, 500);
  check_attention_against_cpu({{300, 517}, 8, 2, 128, 3, false}, DType::kF32, 600);
  check_attention_against_cpu({{300, 517}, 8, 2, 128, 3, false}, DType::kBF16, 700);
}

TEST_F(AttentionGpu, DeterministicBackwardIsBitwiseReproducible) {
  ZT_SKIP_WITHOUT_GPU();
  AttentionCase c{{70, 3, 129}, 8, 2, 64, 3, true, true};
  AttentionTensors gpu = on_gpu(testing::random_attention_inputs(c, DType::kBF16, 900));
  ops::AttentionOutput saved = ops::attention_forward(gpu.q, gpu.k, gpu.v, gpu.cu_seqlens, c.config(), gpu.prefix);
  Tensor grad_out = Tensor::normal(gpu.q.shape(), 901, 0, 0.0, 1.0, DType::kBF16, Device::cuda());
  auto run = [&] {
    return ops::attention_backward(grad_out, gpu.q, gpu.k, gpu.v, saved.out, saved.lse, gpu.cu_seqlens, c.config(),
                                   gpu.prefix);
  };
  ops::AttentionGrads first = run(), second = run();
  testing::expect_bitwise_equal(first.grad_q, second.grad_q, "grad_q");
  testing::expect_bitwise_equal(first.grad_k, second.grad_k, "grad_k");
  testing::expect_bitwise_equal(first.grad_v, second.grad_v, "grad_v");
  testing::expect_bitwise_equal(first.grad_prefix_k, second.grad_prefix_k, "grad_prefix_k");
  testing::expect_bitwise_equal(first.grad_prefix_v, second.grad_prefix_v, "grad_prefix_v");
}

TEST_F(AttentionGpu, AcceptsViewsOfAPackedQkvProjection) {
  ZT_SKIP_WITHOUT_GPU();
  AttentionCase c{{5, 12}, 4, 2, 64, 0, true};
  Tensor qkv = Tensor::normal({17, 8, 64}, 5, 0, 0.0, 1.0, DType::kF32);  // heads: 4 q, 2 k, 2 v
  Tensor qkv_gpu = qkv.to(Device::cuda());
  auto split = [](const Tensor& t) {
    return std::vector<Tensor>{t.narrow(1, 0, 4), t.narrow(1, 4, 2), t.narrow(1, 6, 2)};
  };
  std::vector<Tensor> cpu = split(qkv), gpu = split(qkv_gpu);
  Tensor cu = testing::cu_seqlens_of(c.lengths);
  Tensor want = ops::attention_forward(cpu[0], cpu[1], cpu[2], cu, c.config()).out;
  Tensor have = ops::attention_forward(gpu[0], gpu[1], gpu[2], cu.to(Device::cuda()), c.config()).out;
  testing::expect_attention_matches(have, want, 1e-5, "views of qkv");
}

TEST_F(AttentionGpu, RejectsFloat64AndCpuOffsets) {
  ZT_SKIP_WITHOUT_GPU();
  AttentionCase c{{3}, 2, 1, 8, 0, true};
  AttentionTensors f64 = on_gpu(testing::random_attention_inputs(c, DType::kF64, 1));
  try {
    ops::attention_forward(f64.q, f64.k, f64.v, f64.cu_seqlens, c.config());
    ADD_FAILURE() << "float64 on the GPU was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("float64"), std::string::npos) << e.what();
  }
  AttentionTensors f32 = on_gpu(testing::random_attention_inputs(c, DType::kF32, 1));
  try {
    ops::attention_forward(f32.q, f32.k, f32.v, testing::cu_seqlens_of(c.lengths), c.config());
    ADD_FAILURE() << "cu_seqlens on the CPU was accepted for GPU q";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cu_seqlens is on cpu"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace zt
