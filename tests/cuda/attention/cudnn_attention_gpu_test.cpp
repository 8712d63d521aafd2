// attn_impl=cudnn against the CPU reference from the same inputs: bfloat16 and float16 to
// 1e-2, forward (out and lse) and backward, dense batches (one length) and ragged ones
// (lengths differ, empty sequences included), GQA, MQA, causal and full, head_dim 64 and 128,
// the deterministic backward bit for bit. New GPU tensors start as NaN, so an unwritten
// output element fails. Also the cases cuDNN does not take, whose errors must say why and
// name attn_impl=zerotune; the name parsing and CPU-tensor errors run without a GPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda/common/hopper/hopper_support.h"
#include "ops/attention/attention.h"
#include "ops/attention/attention_backend.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "tests/common/op_test_util.h"
#include "tests/common/test_util.h"
#include "tests/ops/attention/attention_test_util.h"

namespace zt {
namespace {

using ops::AttentionImpl;
using testing::AttentionCase;
using testing::AttentionTensors;
using testing::error_of;
using testing::expect_attention_matches;
using testing::expect_mentions;
using testing::on_gpu;

class CudnnAttentionGpu : public testing::PoisonedGpuTest {};

// Forward and backward through cuDNN against the CPU reference; the backward gets the CPU's
// out and lse, so it is judged on exactly the reference's inputs.
void check_cudnn_against_cpu(const AttentionCase& c, DType dtype, std::uint64_t seed) {
  const std::string what = std::string("cudnn ") + dtype_name(dtype) + " " + c.str() + " seed " + std::to_string(seed);
  const double tol = testing::gpu_tolerance(dtype);
  AttentionTensors cpu = testing::random_attention_inputs(c, dtype, seed), gpu = on_gpu(cpu);
  ops::AttentionOutput ref = ops::attention_forward(cpu.q, cpu.k, cpu.v, cpu.cu_seqlens, c.config());
  ops::AttentionOutput got =
      ops::attention_forward_with(AttentionImpl::kCudnn, gpu.q, gpu.k, gpu.v, gpu.cu_seqlens, c.config());
  expect_attention_matches(got.out, ref.out, tol, what + " out");
  expect_attention_matches(got.lse, ref.lse, 1e-4, what + " lse");

  Tensor grad_out = Tensor::normal(cpu.q.shape(), seed + 10, 0, 0.0, 1.0, dtype);
  ops::AttentionGrads want =
      ops::attention_backward(grad_out, cpu.q, cpu.k, cpu.v, ref.out, ref.lse, cpu.cu_seqlens, c.config());
  ops::AttentionGrads have =
      ops::attention_backward_with(AttentionImpl::kCudnn, grad_out.to(Device::cuda()), gpu.q, gpu.k, gpu.v,
                                   ref.out.to(Device::cuda()), ref.lse.to(Device::cuda()), gpu.cu_seqlens, c.config());
  expect_attention_matches(have.grad_q, want.grad_q, tol, what + " grad_q");
  expect_attention_matches(have.grad_k, want.grad_k, tol, what + " grad_k");
  expect_attention_matches(have.grad_v, want.grad_v, tol, what + " grad_v");
}

TEST(CudnnAttentionImpl, NamesParseAndUnknownNamesListTheChoices) {
  EXPECT_EQ(ops::attention_impl_from_name("cudnn"), AttentionImpl::kCudnn);
  EXPECT_EQ(ops::attention_impl_from_name("zerotune"), AttentionImpl::kZerotune);
  EXPECT_STREQ(ops::attention_impl_name(AttentionImpl::kCudnn), "cudnn");
  EXPECT_STREQ(ops::attention_impl_name(AttentionImpl::kZerotune), "zerotune");
  expect_mentions(error_of([] { ops::attention_impl_from_name("flash"); }), {"\"flash\"", "zerotune", "cudnn"});
}

// The start line's names: what each choice runs for a model's attention.
TEST(CudnnAttentionImpl, KernelDescriptionsNameWhatRuns) {
  EXPECT_EQ(ops::attention_kernel_description(AttentionImpl::kZerotune, Device::cpu(), DType::kBF16, 128),
            "zerotune CPU kernels");
  EXPECT_EQ(ops::attention_kernel_description(AttentionImpl::kCudnn, Device::cpu(), DType::kBF16, 128),
            "cuDNN fused flash attention");
  if (!cuda_available()) GTEST_SKIP() << "the GPU half needs a CUDA GPU";
  const Device gpu = Device::cuda();
  EXPECT_EQ(ops::attention_kernel_name(gpu, DType::kF32, 128), "zerotune simple kernels");
  EXPECT_EQ(ops::attention_kernel_name(gpu, DType::kBF16, 16), "zerotune simple kernels");
  EXPECT_EQ(ops::attention_kernel_name(gpu, DType::kBF16, 96), "zerotune FlashAttention-2 kernels");
  EXPECT_EQ(ops::attention_kernel_name(gpu, DType::kBF16, 128), cuda::hopper::hopper_kernels_available()
                                                                    ? "zerotune Hopper kernels (wgmma, TMA)"
                                                                    : "zerotune FlashAttention-2 kernels");
}

TEST(CudnnAttentionImpl, CpuTensorsAreRejectedNamingTheFix) {
  AttentionCase c{{4, 3}, 2, 1, 8, 0, true};
  AttentionTensors cpu = testing::random_attention_inputs(c, DType::kBF16, 3);
  expect_mentions(error_of([&] {
                    ops::attention_forward_with(AttentionImpl::kCudnn, cpu.q, cpu.k, cpu.v, cpu.cu_seqlens, c.config());
                  }),
                  {"GPU", "cpu", "attn_impl=zerotune"});
  // zerotune's implementation still runs them.
  ops::AttentionOutput out =
      ops::attention_forward_with(AttentionImpl::kZerotune, cpu.q, cpu.k, cpu.v, cpu.cu_seqlens, c.config());
  EXPECT_EQ(out.out.shape(), cpu.q.shape());
}

TEST_F(CudnnAttentionGpu, DenseBatchesMatchCpu) {
  ZT_SKIP_WITHOUT_GPU();
  const std::vector<AttentionCase> cases = {
      {{128, 128}, 4, 4, 64, 0, true},
      {{256, 256}, 8, 2, 128, 0, true},       // GQA 4:1
      {{200, 200, 200}, 4, 1, 64, 0, false},  // MQA, full attention, length off the tiles
      {{1}, 2, 2, 64, 0, true},
      {{2049}, 2, 1, 128, 0, true},
  };
  std::uint64_t seed = 10;
  for (const AttentionCase& c : cases)
    for (DType dtype : {DType::kBF16, DType::kF16}) check_cudnn_against_cpu(c, dtype, seed += 20);
}

TEST_F(CudnnAttentionGpu, RaggedBatchesMatchCpu) {
  ZT_SKIP_WITHOUT_GPU();
  const std::vector<AttentionCase> cases = {
      {{1, 17, 130, 64, 1000}, 4, 2, 64, 0, true},
      {{17, 5, 300}, 8, 1, 128, 0, true},  // MQA
      {{3, 0, 40, 0}, 4, 4, 64, 0, true},  // empty sequences are left out of cuDNN's batch
      {{33, 90}, 8, 8, 128, 0, false},
  };
  std::uint64_t seed = 300;
  for (const AttentionCase& c : cases)
    for (DType dtype : {DType::kBF16, DType::kF16}) check_cudnn_against_cpu(c, dtype, seed += 20);
}

TEST_F(CudnnAttentionGpu, AgreesWithZerotuneAcrossForwardAndBackward) {
  ZT_SKIP_WITHOUT_GPU();
  // cuDNN's lse is zerotune's layout: a cuDNN forward feeds a zerotune backward and back.
  AttentionCase c{{50, 70}, 4, 2, 64, 0, true};
  AttentionTensors gpu = on_gpu(testing::random_attention_inputs(c, DType::kBF16, 41));
  ops::AttentionOutput cudnn =
      ops::attention_forward_with(AttentionImpl::kCudnn, gpu.q, gpu.k, gpu.v, gpu.cu_seqlens, c.config());
  ops::AttentionOutput zerotune = ops::attention_forward(gpu.q, gpu.k, gpu.v, gpu.cu_seqlens, c.config());
  expect_attention_matches(cudnn.lse, zerotune.lse, 1e-4, "lse layouts");
  Tensor grad_out = Tensor::normal(gpu.q.shape(), 42, 0, 0.0, 1.0, DType::kBF16, Device::cuda());
  ops::AttentionGrads a =
      ops::attention_backward(grad_out, gpu.q, gpu.k, gpu.v, cudnn.out, cudnn.lse, gpu.cu_seqlens, c.config());
  ops::AttentionGrads b = ops::attention_backward_with(AttentionImpl::kCudnn, grad_out, gpu.q, gpu.k, gpu.v, cudnn.out,
                                                       cudnn.lse, gpu.cu_seqlens, c.config());
  expect_attention_matches(b.grad_q, a.grad_q, 2e-2, "grad_q across impls");
  expect_attention_matches(b.grad_k, a.grad_k, 2e-2, "grad_k across impls");
  expect_attention_matches(b.grad_v, a.grad_v, 2e-2, "grad_v across impls");
}

TEST_F(CudnnAttentionGpu, DeterministicBackwardIsBitwiseReproducible) {
  ZT_SKIP_WITHOUT_GPU();
  AttentionCase c{{256, 256}, 8, 2, 64, 0, true, true};
  check_cudnn_against_cpu(c, DType::kBF16, 77);
  AttentionTensors gpu = on_gpu(testing::random_attention_inputs(c, DType::kBF16, 78));
  ops::AttentionOutput saved =
      ops::attention_forward_with(AttentionImpl::kCudnn, gpu.q, gpu.k, gpu.v, gpu.cu_seqlens, c.config());
  Tensor grad_out = Tensor::normal(gpu.q.shape(), 79, 0, 0.0, 1.0, DType::kBF16, Device::cuda());
  auto run = [&] {
    return ops::attention_backward_with(AttentionImpl::kCudnn, grad_out, gpu.q, gpu.k, gpu.v, saved.out, saved.lse,
                                        gpu.cu_seqlens, c.config());
  };
  ops::AttentionGrads first = run(), second = run();
  testing::expect_bitwise_equal(first.grad_q, second.grad_q, "grad_q");
  testing::expect_bitwise_equal(first.grad_k, second.grad_k, "grad_k");
  testing::expect_bitwise_equal(first.grad_v, second.grad_v, "grad_v");
}

TEST_F(CudnnAttentionGpu, CachedPlansServeAlternatingShapes) {
  ZT_SKIP_WITHOUT_GPU();
  AttentionCase a{{64, 64}, 4, 2, 64, 0, true}, b{{10, 90}, 4, 2, 64, 0, true};
  AttentionTensors ga = on_gpu(testing::random_attention_inputs(a, DType::kBF16, 5));
  AttentionTensors gb = on_gpu(testing::random_attention_inputs(b, DType::kBF16, 6));
  auto forward = [](const AttentionCase& c, const AttentionTensors& t) {
    return ops::attention_forward_with(AttentionImpl::kCudnn, t.q, t.k, t.v, t.cu_seqlens, c.config()).out;
  };
  Tensor first_a = forward(a, ga), first_b = forward(b, gb);
  testing::expect_bitwise_equal(forward(a, ga), first_a, "shape a again");
  testing::expect_bitwise_equal(forward(b, gb), first_b, "shape b again");
}

TEST_F(CudnnAttentionGpu, UnsupportedCasesSayWhyAndNameTheFallback) {
  ZT_SKIP_WITHOUT_GPU();
  AttentionCase c{{8, 8}, 2, 1, 64, 0, true};
  AttentionTensors f32 = on_gpu(testing::random_attention_inputs(c, DType::kF32, 1));
  expect_mentions(error_of([&] {
                    ops::attention_forward_with(AttentionImpl::kCudnn, f32.q, f32.k, f32.v, f32.cu_seqlens, c.config());
                  }),
                  {"float32", "bfloat16 or float16", "attn_impl=zerotune"});
  AttentionCase with_prefix{{8, 8}, 2, 1, 64, 4, true};
  AttentionTensors p = on_gpu(testing::random_attention_inputs(with_prefix, DType::kBF16, 2));
  expect_mentions(error_of([&] {
                    ops::attention_forward_with(AttentionImpl::kCudnn, p.q, p.k, p.v, p.cu_seqlens,
                                                with_prefix.config(), p.prefix);
                  }),
                  {"prefix", "attn_impl=zerotune"});
  AttentionCase odd{{8}, 2, 1, 12, 0, true};
  AttentionTensors o = on_gpu(testing::random_attention_inputs(odd, DType::kBF16, 3));
  expect_mentions(
      error_of([&] { ops::attention_forward_with(AttentionImpl::kCudnn, o.q, o.k, o.v, o.cu_seqlens, odd.config()); }),
      {"head_dim", "multiple of 8", "attn_impl=zerotune"});
}

}  // namespace
}  // namespace zt
