// The fused linear + cross-entropy on the GPU against the CPU reference from the same values:
// tokens 1 to 2049, vocabularies 1 to 50001, hidden sizes 16 to 1536, float32 / bfloat16 /
// float16, both reductions, chunks smaller than the batch and automatic, float32 and
// working-dtype chunk logits, a gradient scale, all-ignored labels, the peak memory the op
// allocates, and the autograd wrapper with a tied embedding. The largest shape is checked
// against the unfused GPU ops in float32 (the CPU reference would take minutes). New GPU
// tensors start as NaN, so an unwritten gradient element fails.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "autograd/functions.h"
#include "ops/gemm/linear.h"
#include "ops/loss/cross_entropy.h"
#include "ops/loss/linear_cross_entropy.h"
#include "runtime/check.h"
#include "runtime/memory/caching_allocator.h"
#include "tests/common/op_test_util.h"
#include "tests/common/test_util.h"

namespace zt {
namespace {

using ops::Reduction;

class LinearCrossEntropyGpu : public testing::PoisonedGpuTest {};

struct GpuCase {
  std::int64_t tokens, vocab, hidden;
  DType dtype = DType::kF32;
  Reduction reduction = Reduction::kMean;
  std::int64_t chunk = 0;  // 0: automatic
  bool float32_logits = true;
  double grad_scale = 1.0;

  ops::LinearCrossEntropyOptions options() const {
    ops::LinearCrossEntropyOptions o;
    o.reduction = reduction;
    o.chunk_tokens = chunk;
    o.float32_logits = float32_logits;
    o.grad_scale = grad_scale;
    return o;
  }
  std::string str() const {
    return "T " + std::to_string(tokens) + " V " + std::to_string(vocab) + " H " + std::to_string(hidden) + " " +
           dtype_name(dtype) + (reduction == Reduction::kMean ? " mean" : " sum") + " chunk " + std::to_string(chunk) +
           (float32_logits ? " f32-logits" : " dtype-logits") + " grad_scale " + std::to_string(grad_scale);
  }
};

// A quarter of the tokens ignored, the rest spread over the vocabulary.
Tensor make_labels(std::int64_t tokens, std::int64_t vocab, std::uint64_t seed, DType dtype = DType::kI64) {
  std::vector<double> values;
  for (std::int64_t t = 0; t < tokens; ++t) {
    auto spread = static_cast<std::int64_t>((static_cast<std::uint64_t>(t) * 2654435761u + seed) % 4294967291u);
    values.push_back(t % 4 == 2 ? -100.0 : static_cast<double>(spread % vocab));
  }
  return Tensor::from_values(values, {tokens}, dtype);
}

struct Inputs {
  Tensor hidden, weight, labels;
};
// Logits of unit scale: the weight's std is 2 / sqrt(hidden), as a trained lm_head's roughly is.
Inputs make_inputs(const GpuCase& c, std::uint64_t seed) {
  return {
      Tensor::normal({c.tokens, c.hidden}, seed, 0, 0.0, 1.0, c.dtype),
      Tensor::normal({c.vocab, c.hidden}, seed + 1, 0, 0.0, 2.0 / std::sqrt(static_cast<double>(c.hidden)), c.dtype),
      make_labels(c.tokens, c.vocab, seed + 2)};
}

Inputs to_gpu(const Inputs& in) {
  return {in.hidden.to(Device::cuda()), in.weight.to(Device::cuda()), in.labels.to(Device::cuda())};
}

double loss_tolerance(const GpuCase& c) {
  if (!c.float32_logits && c.dtype != DType::kF32) return 1e-2;  // logits rounded to 16 bits
  return c.dtype == DType::kF32 ? 1e-5 : 1e-4;
}

void expect_scalar_near(const Tensor& gpu, double want, double rel, const std::string& what) {
  ASSERT_TRUE(gpu.device().is_cuda()) << what;
  double have = gpu.item();
  ASSERT_FALSE(std::isnan(have)) << what << ": NaN";
  EXPECT_NEAR(have, want, rel * std::max(1.0, std::abs(want))) << what;
}

// Runs forward (with both gradients) and backward on the GPU and on the CPU from the same
// values, and compares everything either returns.
void check_against_cpu(const GpuCase& c, std::uint64_t seed) {
  const std::string what = c.str();
  Inputs cpu = make_inputs(c, seed), gpu = to_gpu(cpu);
  const ops::LinearCrossEntropyOptions options = c.options();
  ops::LinearCrossEntropyOutput want =
      ops::linear_cross_entropy_forward(cpu.hidden, cpu.weight, cpu.labels, options, {true, true});
  ops::LinearCrossEntropyOutput have =
      ops::linear_cross_entropy_forward(gpu.hidden, gpu.weight, gpu.labels, options, {true, true});
  expect_scalar_near(have.loss, want.loss.item(), loss_tolerance(c), what + " loss");
  EXPECT_EQ(have.valid_count.item(), want.valid_count.item()) << what;
  const double tol = testing::gpu_tolerance(c.dtype);
  testing::expect_gpu_matches(have.grad_hidden, want.grad_hidden, tol, what + " grad_hidden (forward)");
  testing::expect_gpu_matches(have.grad_weight, want.grad_weight, tol, what + " grad_weight (forward)");

  const double grad_loss = 0.5;
  ops::LinearCrossEntropyGrads want_grads =
      ops::linear_cross_entropy_backward(Tensor::from_values({grad_loss}, {}, DType::kF32), want, c.dtype, options);
  ops::LinearCrossEntropyGrads have_grads = ops::linear_cross_entropy_backward(
      Tensor::full({}, grad_loss, DType::kF32, Device::cuda()), have, c.dtype, options);
  testing::expect_gpu_matches(have_grads.grad_hidden, want_grads.grad_hidden, tol, what + " grad_hidden");
  testing::expect_gpu_matches(have_grads.grad_weight, want_grads.grad_weight, tol, what + " grad_weight");

  // Into a float32 sink: the scaled weight gradient added, unrounded, to what the sink held
  // (the CPU reference asked for float32, as it rounds to the weight dtype it is given).
  const Tensor start = Tensor::full(want.grad_weight.shape(), 0.25, DType::kF32);
  Tensor cpu_sink = start.clone(), gpu_sink = start.to(Device::cuda());
  ops::linear_cross_entropy_backward(Tensor::from_values({grad_loss}, {}, DType::kF32), want, DType::kF32, options,
                                     cpu_sink);
  const ops::LinearCrossEntropyGrads into = ops::linear_cross_entropy_backward(
      Tensor::full({}, grad_loss, DType::kF32, Device::cuda()), have, c.dtype, options, gpu_sink);
  EXPECT_FALSE(into.grad_weight.defined()) << what;
  testing::expect_gpu_matches(gpu_sink, cpu_sink, tol, what + " weight sink");
}

TEST_F(LinearCrossEntropyGpu, MatchesCpuOverShapesDtypesAndChunks) {
  ZT_SKIP_WITHOUT_GPU();
  const std::vector<GpuCase> cases = {
      {1, 1, 16},
      {1, 33, 16, DType::kBF16},
      {17, 33, 96, DType::kF32, Reduction::kSum, 7},
      {17, 33, 96, DType::kBF16, Reduction::kMean, 7},
      {1000, 33, 1536, DType::kF32, Reduction::kMean, 256},
      {1000, 33, 1536, DType::kBF16, Reduction::kSum},
      {2049, 33, 16, DType::kF32, Reduction::kMean, 1000},
      {2049, 1, 96, DType::kBF16, Reduction::kMean, 512},
      {17, 50001, 96, DType::kF32, Reduction::kMean, 5},
      {17, 50001, 96, DType::kBF16, Reduction::kSum},
      {17, 50001, 96, DType::kBF16, Reduction::kMean, 4, false},
      {1, 50001, 1536, DType::kBF16},
      {1000, 50001, 16, DType::kF32, Reduction::kSum, 384},
      {1000, 50001, 16, DType::kBF16, Reduction::kMean, 0, false},
      {1000, 50001, 16, DType::kF16, Reduction::kMean, 300, true, 1024.0},
      {1000, 50001, 16, DType::kF16, Reduction::kSum, 0, false, 8.0},
  };
  std::uint64_t seed = 1000;
  for (const GpuCase& c : cases) check_against_cpu(c, seed += 10);
}

// The CPU reference would take minutes at this size; the unfused float32 GPU ops, tested
// against the CPU themselves, are the reference instead.
// Preference training's use: per-token weights of either sign (one per sequence) and the
// per-token losses, over chunks smaller than the batch.
TEST_F(LinearCrossEntropyGpu, TokenWeightsAndTokenLossesMatchCpu) {
  ZT_SKIP_WITHOUT_GPU();
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    GpuCase c{.tokens = 300, .vocab = 1003, .hidden = 64, .dtype = dtype, .reduction = Reduction::kSum, .chunk = 128};
    const std::string what = c.str();
    Inputs cpu = make_inputs(c, 17), gpu = to_gpu(cpu);
    std::vector<double> weights;
    for (std::int64_t t = 0; t < c.tokens; ++t) weights.push_back(t < 100 ? 0.75 : (t < 220 ? -1.5 : 0.0));
    ops::LinearCrossEntropyOptions options = c.options();
    options.token_losses = true;
    options.token_weights = Tensor::from_values(weights, {c.tokens}, DType::kF32);
    ops::LinearCrossEntropyOutput want =
        ops::linear_cross_entropy_forward(cpu.hidden, cpu.weight, cpu.labels, options, {true, true});
    options.token_weights = options.token_weights.to(Device::cuda());
    ops::LinearCrossEntropyOutput have =
        ops::linear_cross_entropy_forward(gpu.hidden, gpu.weight, gpu.labels, options, {true, true});
    expect_scalar_near(have.loss, want.loss.item(), loss_tolerance(c), what + " weighted loss");
    testing::expect_gpu_near(have.token_loss, want.token_loss, dtype == DType::kF32 ? 1e-4 : 1e-3,
                             what + " token losses");
    const double tol = testing::gpu_tolerance(dtype);
    testing::expect_gpu_matches(have.grad_hidden, want.grad_hidden, tol, what + " grad_hidden");
    testing::expect_gpu_matches(have.grad_weight, want.grad_weight, tol, what + " grad_weight");
  }
}

TEST_F(LinearCrossEntropyGpu, LargestShapeMatchesUnfusedFloat32Ops) {
  ZT_SKIP_WITHOUT_GPU();
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    GpuCase c{2049, 50001, 1536, dtype, Reduction::kMean, 640};
    Inputs gpu = to_gpu(make_inputs(c, 77));
    Tensor h32 = gpu.hidden.to(DType::kF32), w32 = gpu.weight.to(DType::kF32);
    Tensor logits = ops::linear_forward(h32, w32);
    ops::CrossEntropyOutput ce = ops::cross_entropy_forward(logits, gpu.labels);
    Tensor dlogits = ops::cross_entropy_backward(Tensor::full({}, 1.0, DType::kF32, Device::cuda()), logits, gpu.labels,
                                                 ce.logsumexp, ce.valid_count);
    ops::LinearGrads want = ops::linear_backward(dlogits, h32, w32, {true, true, false});
    ops::LinearCrossEntropyOutput have =
        ops::linear_cross_entropy_forward(gpu.hidden, gpu.weight, gpu.labels, c.options(), {true, true});
    expect_scalar_near(have.loss, ce.loss.item(), loss_tolerance(c), c.str() + " loss");
    const double tol = testing::gpu_tolerance(dtype);
    EXPECT_LE(relative_error(have.grad_hidden.to(DType::kF32), want.grad_x), tol) << c.str() << " grad_hidden";
    EXPECT_LE(relative_error(have.grad_weight, want.grad_weight), tol) << c.str() << " grad_weight";
  }
}

TEST_F(LinearCrossEntropyGpu, AllIgnoredGivesZeroLossAndZeroGradients) {
  ZT_SKIP_WITHOUT_GPU();
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    for (Reduction reduction : {Reduction::kMean, Reduction::kSum}) {
      GpuCase c{300, 1001, 64, dtype, reduction, 128};
      Inputs gpu = to_gpu(make_inputs(c, 5));
      Tensor labels = Tensor::full({300}, -100, DType::kI64, Device::cuda());
      ops::LinearCrossEntropyOutput out =
          ops::linear_cross_entropy_forward(gpu.hidden, gpu.weight, labels, c.options(), {true, true});
      EXPECT_EQ(out.loss.item(), 0.0) << c.str();
      EXPECT_EQ(out.valid_count.item(), 0.0) << c.str();
      testing::expect_gpu_near(out.grad_hidden, Tensor::zeros({300, 64}, dtype), 0.0, c.str() + " grad_hidden");
      testing::expect_gpu_near(out.grad_weight, Tensor::zeros({1001, 64}, DType::kF32), 0.0, c.str() + " grad_weight");
    }
  }
}

TEST_F(LinearCrossEntropyGpu, Int32LabelsEmptyBatchAndBadLabels) {
  ZT_SKIP_WITHOUT_GPU();
  GpuCase c{40, 77, 32, DType::kBF16, Reduction::kMean, 16};
  Inputs gpu = to_gpu(make_inputs(c, 9));
  ops::LinearCrossEntropyOutput i64 =
      ops::linear_cross_entropy_forward(gpu.hidden, gpu.weight, gpu.labels, c.options(), {true, true});
  ops::LinearCrossEntropyOutput i32 =
      ops::linear_cross_entropy_forward(gpu.hidden, gpu.weight, gpu.labels.to(DType::kI32), c.options(), {true, true});
  EXPECT_EQ(i64.loss.item(), i32.loss.item());
  EXPECT_EQ(max_abs_diff(i64.grad_hidden, i32.grad_hidden), 0.0);

  ops::LinearCrossEntropyOutput empty =
      ops::linear_cross_entropy_forward(Tensor::empty({0, 32}, DType::kBF16, Device::cuda()), gpu.weight,
                                        Tensor::empty({0}, DType::kI64, Device::cuda()), c.options(), {true, true});
  EXPECT_EQ(empty.loss.item(), 0.0);
  testing::expect_gpu_near(empty.grad_weight, Tensor::zeros({77, 32}, DType::kF32), 0.0, "empty batch grad_weight");

  Tensor bad = make_labels(40, 77, 9);
  bad.data<std::int64_t>()[13] = 77;
  testing::expect_mentions(
      testing::error_of([&] { ops::linear_cross_entropy_forward(gpu.hidden, gpu.weight, bad.to(Device::cuda())); }),
      {"token 13", "label 77", "[0, 77)"});
}

TEST_F(LinearCrossEntropyGpu, LossIsBitwiseReproducible) {
  ZT_SKIP_WITHOUT_GPU();
  GpuCase c{700, 5003, 128, DType::kBF16, Reduction::kMean, 256};
  Inputs gpu = to_gpu(make_inputs(c, 11));
  auto run = [&] {
    return ops::linear_cross_entropy_forward(gpu.hidden, gpu.weight, gpu.labels, c.options()).loss.item();
  };
  EXPECT_EQ(run(), run());
}

// Beyond its outputs, the op may hold one chunk of logits, the per-token losses and one
// cuBLASLt workspace at a time; the [tokens, vocab] logits (here 410 MB) must never exist.
TEST_F(LinearCrossEntropyGpu, PeakMemoryIsOneChunkBeyondTheOutputs) {
  ZT_SKIP_WITHOUT_GPU();
  GpuCase c{2049, 50001, 1536, DType::kBF16, Reduction::kMean, 256};
  Inputs gpu = to_gpu(make_inputs(c, 13));
  CachingDeviceAllocator& allocator = device_allocator(0);
  ZT_CUDA_CHECK(cudaDeviceSynchronize());
  std::size_t before = allocator.stats().allocated_bytes;
  allocator.reset_peak_stats();
  ops::LinearCrossEntropyOutput out =
      ops::linear_cross_entropy_forward(gpu.hidden, gpu.weight, gpu.labels, c.options(), {true, true});
  ZT_CUDA_CHECK(cudaDeviceSynchronize());
  std::size_t peak = allocator.stats().peak_allocated_bytes - before;
  std::size_t outputs = out.grad_hidden.nbytes() + out.grad_weight.nbytes() + 1024;
  std::size_t chunk = 256u * 50008u * 4u, losses = 2049u * 4u, workspace = 32u << 20;
  // A cached block is handed out whole when what is left over would be under 1 MiB.
  std::size_t block_slack = 8u << 20;
  EXPECT_LE(peak, outputs + chunk + losses + workspace + block_slack)
      << "peak " << peak << " bytes, outputs " << outputs << ", chunk " << chunk;
  EXPECT_GE(peak, outputs + chunk) << "the chunk buffer did not come from the caching allocator";
}

TEST_F(LinearCrossEntropyGpu, AutogradTiedEmbeddingMatchesTheCpuTape) {
  ZT_SKIP_WITHOUT_GPU();
  Tensor table = Tensor::normal({301, 48}, 21, 0, 0.0, 0.3, DType::kF32);
  std::vector<double> id_values;
  for (std::int64_t t = 0; t < 90; ++t) id_values.push_back(static_cast<double>((t * 37) % 301));  // repeats
  Tensor ids = Tensor::from_values(id_values, {90}, DType::kI64), labels = make_labels(90, 301, 23);
  auto run = [&](Device device) {
    autograd::Variable embedding(table.to(device), true, "embedding");
    autograd::Variable h = autograd::embedding(embedding, ids.to(device));
    ops::LinearCrossEntropyOptions options;
    options.chunk_tokens = 32;
    autograd::Variable loss = autograd::linear_cross_entropy(h, embedding, labels.to(device), options);
    autograd::scale(loss, 3.0).backward();
    return std::make_pair(loss.data(), embedding.grad());
  };
  auto [cpu_loss, cpu_grad] = run(Device::cpu());
  auto [gpu_loss, gpu_grad] = run(Device::cuda());
  expect_scalar_near(gpu_loss, cpu_loss.item(), 1e-5, "tied loss");
  testing::expect_gpu_matches(gpu_grad, cpu_grad, 1e-5, "tied embedding grad (lookup + lm_head)");
}

}  // namespace
}  // namespace zt
