// The tensor-core attention kernels called directly, each against the CPU reference on the same
// inputs: the Hopper forward and backward (cuda/attention/hopper/, which ops uses on sm_90) and
// the Ampere FlashAttention-2 forward and atomic-dQ backward (cuda/attention/flash/, used on
// older GPUs and kept tested on Hopper here; its deterministic mode is flash_attention_gpu_test's). Awkward
// shapes: single sequences of 1, 17, 1000 and 2049 tokens, packed uneven batches, one K/V
// head, GQA 8:1, head dims 64 and 128, prefixes of 3, 16 and 130 rows, an empty sequence,
// causal and full, both dtypes. Outputs and gradients start as NaN, so any element a kernel forgets to write fails;
// repeated runs must agree bitwise. The Tiny* test is small enough for compute-sanitizer.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cuda/attention/flash/flash_attention.cuh"
#include "cuda/attention/hopper/hopper_attention.cuh"
#include "cuda/common/hopper/hopper_support.h"
#include "runtime/device.h"
#include "tests/common/op_test_util.h"
#include "tests/common/test_util.h"
#include "tests/ops/attention/attention_test_util.h"

namespace zt {
namespace {

using testing::AttentionCase;
using testing::AttentionTensors;

enum class Kernel { kHopper, kAmpere };

class AttentionKernels : public testing::PoisonedGpuTest {
 protected:
  // Runs the kernel on c's random inputs and compares out and lse with the CPU reference;
  // returns the GPU result for repeat checks.
  ops::AttentionOutput check(Kernel kernel, const AttentionCase& c, DType dtype, std::uint64_t seed) {
    const std::string what = std::string(kernel == Kernel::kHopper ? "hopper " : "ampere ") + dtype_name(dtype) + " " +
                             c.str() + " seed " + std::to_string(seed);
    AttentionTensors cpu = testing::random_attention_inputs(c, dtype, seed);
    AttentionTensors gpu = testing::on_gpu(cpu);
    const ops::AttentionOutput want =
        ops::attention_forward(cpu.q, cpu.k, cpu.v, cpu.cu_seqlens, c.config(), cpu.prefix);
    ops::AttentionOutput got = run(kernel, c, dtype, gpu);
    testing::expect_attention_matches(got.out, want.out, testing::gpu_tolerance(dtype), what + " out");
    testing::expect_attention_matches(got.lse, want.lse, 1e-5, what + " lse");
    return got;
  }

  // The backward kernel (the atomic-dQ modes) on c's random inputs, given the CPU's out and
  // lse, against the CPU reference's gradients.
  void check_backward(Kernel kernel, const AttentionCase& c, DType dtype, std::uint64_t seed) {
    const std::string what = std::string(kernel == Kernel::kHopper ? "hopper " : "ampere ") + dtype_name(dtype) +
                             " backward " + c.str() + " seed " + std::to_string(seed);
    const double tol = testing::gpu_tolerance(dtype);
    AttentionTensors cpu = testing::random_attention_inputs(c, dtype, seed);
    AttentionTensors gpu = testing::on_gpu(cpu);
    const ops::AttentionOutput ref =
        ops::attention_forward(cpu.q, cpu.k, cpu.v, cpu.cu_seqlens, c.config(), cpu.prefix);
    const Tensor grad_out = Tensor::normal(cpu.q.shape(), seed + 10, 0, 0.0, 1.0, dtype);
    const ops::AttentionGrads want = ops::attention_backward(grad_out, cpu.q, cpu.k, cpu.v, ref.out, ref.lse,
                                                             cpu.cu_seqlens, c.config(), cpu.prefix);
    const Tensor out = ref.out.to(Device::cuda()), lse = ref.lse.to(Device::cuda()), dout = grad_out.to(Device::cuda());
    ops::AttentionGrads have;
    have.grad_q = Tensor::empty(gpu.q.shape(), dtype, Device::cuda());
    have.grad_k = Tensor::empty(gpu.k.shape(), dtype, Device::cuda());
    have.grad_v = Tensor::empty(gpu.v.shape(), dtype, Device::cuda());
    if (c.prefix_len > 0) {
      have.grad_prefix_k = Tensor::empty(gpu.prefix.k.shape(), dtype, Device::cuda());
      have.grad_prefix_v = Tensor::empty(gpu.prefix.v.shape(), dtype, Device::cuda());
    }
    const cuda::AttentionGradOutputs grads{have.grad_q.data_ptr(), have.grad_k.data_ptr(), have.grad_v.data_ptr(),
                                           c.prefix_len > 0 ? have.grad_prefix_k.data_ptr() : nullptr,
                                           c.prefix_len > 0 ? have.grad_prefix_v.data_ptr() : nullptr};
    Tensor delta = Tensor::empty({c.total(), c.heads}, DType::kF32, Device::cuda());
    Tensor lse_log2 = Tensor::empty({c.heads, c.total()}, DType::kF32, Device::cuda());
    Tensor dq_accum = Tensor::empty(gpu.q.shape(), DType::kF32, Device::cuda());
    const cuda::AttentionDims dims = dims_of(c);
    auto expect_gradients = [&](const std::string& how) {
      testing::expect_attention_matches(have.grad_q, want.grad_q, tol, what + how + " grad_q");
      testing::expect_attention_matches(have.grad_k, want.grad_k, tol, what + how + " grad_k");
      testing::expect_attention_matches(have.grad_v, want.grad_v, tol, what + how + " grad_v");
      if (c.prefix_len == 0) return;
      testing::expect_attention_matches(have.grad_prefix_k, want.grad_prefix_k, tol, what + how + " grad_prefix_k");
      testing::expect_attention_matches(have.grad_prefix_v, want.grad_prefix_v, tol, what + how + " grad_prefix_v");
    };
    if (kernel == Kernel::kAmpere) {
      cuda::flash_attention_backward(dims, inputs_of(gpu), dtype, out.data_ptr(), dout.data_ptr(), lse.data<float>(),
                                     {delta.data<float>(), dq_accum.data<float>()}, grads, false, nullptr);
      expect_gradients("");
      return;
    }
    // Without key-sum scratch every block owns whole dK/dV rows; with it a GQA group's heads
    // may be split over blocks that add partial sums. Both must match the reference.
    const std::int64_t key_sum_floats = cuda::hopper_backward_key_sum_floats(dims);
    for (bool split : {false, true}) {
      if (split && key_sum_floats == 0) break;
      Tensor key_sums = split ? Tensor::empty({key_sum_floats}, DType::kF32, Device::cuda()) : Tensor();
      for (Tensor* grad : {&have.grad_q, &have.grad_k, &have.grad_v})
        *grad = Tensor::empty(grad->shape(), dtype, Device::cuda());  // NaN until written
      cuda::hopper_attention_backward(dims, inputs_of(gpu), dtype, out.data_ptr(), dout.data_ptr(), lse.data<float>(),
                                      {lse_log2.data<float>(), delta.data<float>(), dq_accum.data<float>(),
                                       split ? key_sums.data<float>() : nullptr},
                                      {have.grad_q.data_ptr(), have.grad_k.data_ptr(), have.grad_v.data_ptr(),
                                       grads.grad_prefix_k, grads.grad_prefix_v},
                                      nullptr);
      expect_gradients(split ? " (heads split " + std::to_string(cuda::hopper_backward_head_splits(dims)) + " ways)"
                             : "");
    }
  }

  static cuda::AttentionDims dims_of(const AttentionCase& c) {
    cuda::AttentionDims dims;
    dims.total_tokens = c.total();
    dims.batch = static_cast<int>(c.batch());
    dims.num_heads = static_cast<int>(c.heads);
    dims.num_kv_heads = static_cast<int>(c.kv_heads);
    dims.head_dim = static_cast<int>(c.head_dim);
    dims.prefix_len = static_cast<int>(c.prefix_len);
    for (std::int64_t length : c.lengths) dims.max_seqlen = std::max<int>(dims.max_seqlen, static_cast<int>(length));
    dims.softmax_scale = static_cast<float>(c.config().softmax_scale);
    dims.causal = c.causal;
    return dims;
  }

  static cuda::AttentionInputs inputs_of(const AttentionTensors& gpu) {
    return {gpu.q.data_ptr(),
            gpu.k.data_ptr(),
            gpu.v.data_ptr(),
            gpu.prefix.k.defined() ? gpu.prefix.k.data_ptr() : nullptr,
            gpu.prefix.v.defined() ? gpu.prefix.v.data_ptr() : nullptr,
            gpu.cu_seqlens.data<std::int32_t>()};
  }

  static ops::AttentionOutput run(Kernel kernel, const AttentionCase& c, DType dtype, const AttentionTensors& gpu) {
    const cuda::AttentionDims dims = dims_of(c);
    const cuda::AttentionInputs inputs = inputs_of(gpu);
    ops::AttentionOutput result{Tensor::empty(gpu.q.shape(), dtype, Device::cuda()),
                                Tensor::empty({c.total(), c.heads}, DType::kF32, Device::cuda())};
    if (kernel == Kernel::kHopper)
      cuda::hopper_attention_forward(dims, inputs, dtype, result.out.data_ptr(), result.lse.data<float>(), nullptr);
    else
      cuda::flash_attention_forward(dims, inputs, dtype, result.out.data_ptr(), result.lse.data<float>(), nullptr);
    return result;
  }

  // Both kernels where the GPU runs them; the Hopper one only on sm_90 with sm_90a code.
  template <typename F>
  void for_each_kernel(F&& f) {
    f(Kernel::kAmpere);
    if (cuda::hopper::hopper_kernels_available())
      f(Kernel::kHopper);
    else
      std::printf("[ hopper kernel not run: the GPU is not compute capability 9.0 or the build lacks sm_90a ]\n");
  }
};

TEST_F(AttentionKernels, SingleSequencesOfAwkwardLengths) {
  ZT_SKIP_WITHOUT_GPU();
  for_each_kernel([&](Kernel kernel) {
    std::uint64_t seed = 100;
    for (std::int64_t length : {1, 17, 1000, 2049}) {
      check(kernel, {{length}, 4, 2, 128, 0, true}, DType::kBF16, seed += 10);
      check(kernel, {{length}, 4, 2, 64, 0, true}, DType::kF16, seed += 10);
    }
    check(kernel, {{1000}, 2, 1, 128, 0, false}, DType::kF16, seed += 10);
    check(kernel, {{17}, 4, 2, 64, 0, false}, DType::kBF16, seed += 10);
  });
}

TEST_F(AttentionKernels, PackedUnevenBatchesHeadDimsAndDtypes) {
  ZT_SKIP_WITHOUT_GPU();
  for_each_kernel([&](Kernel kernel) {
    std::uint64_t seed = 200;
    for (std::int64_t head_dim : {64, 128})
      for (DType dtype : {DType::kBF16, DType::kF16})
        for (bool causal : {true, false})
          check(kernel, {{1, 17, 130, 64, 1000, 300}, 4, 2, head_dim, 0, causal}, dtype, seed += 10);
  });
}

TEST_F(AttentionKernels, OneKvHeadAndGroupedQueries) {
  ZT_SKIP_WITHOUT_GPU();
  for_each_kernel([&](Kernel kernel) {
    std::uint64_t seed = 300;
    check(kernel, {{1, 17, 130, 64, 300}, 4, 1, 128, 0, true}, DType::kBF16, seed += 10);
    check(kernel, {{1, 17, 130, 64, 300}, 16, 2, 64, 0, true}, DType::kF16, seed += 10);
    check(kernel, {{600, 129}, 16, 2, 128, 0, false}, DType::kBF16, seed += 10);
  });
}

TEST_F(AttentionKernels, PrefixesThatDoNotFillATile) {
  ZT_SKIP_WITHOUT_GPU();
  for_each_kernel([&](Kernel kernel) {
    std::uint64_t seed = 400;
    for (std::int64_t prefix : {3, 130})
      for (bool causal : {true, false}) {
        check(kernel, {{1, 17, 130, 64, 200}, 4, 2, 128, prefix, causal}, DType::kBF16, seed += 10);
        check(kernel, {{1000, 5}, 4, 1, 64, prefix, causal}, DType::kF16, seed += 10);
      }
    check(kernel, {{5, 0, 70}, 4, 2, 64, 16, true}, DType::kBF16, seed += 10);  // an empty sequence
  });
}

TEST_F(AttentionKernels, RepeatedRunsAgreeBitwise) {
  ZT_SKIP_WITHOUT_GPU();
  for_each_kernel([&](Kernel kernel) {
    const AttentionCase c{{70, 3, 1029, 600}, 8, 2, 128, 3, true};
    AttentionTensors gpu = testing::on_gpu(testing::random_attention_inputs(c, DType::kBF16, 500));
    const ops::AttentionOutput first = run(kernel, c, DType::kBF16, gpu), second = run(kernel, c, DType::kBF16, gpu);
    testing::expect_bitwise_equal(first.out, second.out, "out");
    testing::expect_bitwise_equal(first.lse, second.lse, "lse");
  });
}

// At the GQA training shapes one block per (key tile, kv head) leaves SMs idle, so the
// backward splits the group's heads; MHA and prefixes never split.
TEST_F(AttentionKernels, BackwardSplitsGroupedHeadsAtTrainingShapes) {
  ZT_SKIP_WITHOUT_GPU();
  const AttentionCase qwen_1_5b{{2048, 2048, 2048, 2048}, 12, 2, 128, 0, true};
  const cuda::AttentionDims gqa = dims_of(qwen_1_5b);
  EXPECT_GT(cuda::hopper_backward_head_splits(gqa), 1);
  EXPECT_EQ(6 % cuda::hopper_backward_head_splits(gqa), 0) << "a split takes an equal share of the group";
  EXPECT_EQ(cuda::hopper_backward_key_sum_floats(gqa), 2 * gqa.total_tokens * 2 * 128);
  EXPECT_EQ(cuda::hopper_backward_head_splits(dims_of({{2048, 2048}, 12, 12, 128, 0, true})), 1);
  EXPECT_EQ(cuda::hopper_backward_head_splits(dims_of({{2048}, 12, 2, 128, 16, true})), 1);
  EXPECT_EQ(cuda::hopper_backward_key_sum_floats(dims_of({{2048}, 12, 2, 128, 16, true})), 0);
}

TEST_F(AttentionKernels, BackwardOnAwkwardShapes) {
  ZT_SKIP_WITHOUT_GPU();
  for_each_kernel([&](Kernel kernel) {
    std::uint64_t seed = 700;
    for (std::int64_t length : {1, 17, 1000, 2049})
      check_backward(kernel, {{length}, 4, 2, 128, 0, true}, DType::kBF16, seed += 20);
    for (std::int64_t head_dim : {64, 128})
      for (DType dtype : {DType::kBF16, DType::kF16})
        for (bool causal : {true, false})
          check_backward(kernel, {{1, 17, 130, 64, 1000, 300}, 4, 2, head_dim, 0, causal}, dtype, seed += 20);
    check_backward(kernel, {{1, 17, 130, 64, 300}, 4, 1, 128, 0, true}, DType::kBF16, seed += 20);  // MQA
    check_backward(kernel, {{1, 17, 130, 64, 300}, 16, 2, 64, 0, true}, DType::kF16, seed += 20);   // GQA 8:1
    // Enough short sequences that a group of 4 heads is split in two shares on a 132-SM GPU
    // (the case above splits into single heads).
    check_backward(kernel, {std::vector<std::int64_t>(34, 130), 8, 2, 128, 0, true}, DType::kBF16, seed += 20);
    for (std::int64_t prefix : {3, 130})
      for (bool causal : {true, false})
        check_backward(kernel, {{1, 17, 130, 64, 200}, 4, 2, 128, prefix, causal}, DType::kBF16, seed += 20);
    check_backward(kernel, {{1000, 5}, 4, 1, 64, 16, true}, DType::kF16, seed += 20);
    check_backward(kernel, {{5, 0, 70}, 4, 2, 64, 16, true}, DType::kBF16, seed += 20);  // an empty sequence
  });
}

// Shapes for the sanitizers: tail rows and keys, a prefix, GQA, both head dims.
TEST_F(AttentionKernels, TinyShapesForSanitizers) {
  ZT_SKIP_WITHOUT_GPU();
  for_each_kernel([&](Kernel kernel) {
    std::uint64_t seed = 600;
    for (std::int64_t head_dim : {64, 128}) {
      check(kernel, {{1, 3, 20}, 2, 1, head_dim, 2, true}, DType::kBF16, seed += 10);
      check(kernel, {{130}, 2, 2, head_dim, 0, false}, DType::kF16, seed += 10);
      check_backward(kernel, {{1, 3, 20}, 2, 1, head_dim, 2, true}, DType::kBF16, seed += 10);
      check_backward(kernel, {{130}, 2, 2, head_dim, 0, false}, DType::kF16, seed += 10);
    }
  });
}

}  // namespace
}  // namespace zt
