// Embedding, softmax and cross-entropy kernels against the CPU reference from the same
// inputs: float32 to 1e-5, 16-bit to 1e-2, with new GPU tensors poisoned as NaN so unwritten
// outputs fail, and a vocabulary of Qwen's size for cross-entropy.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "ops/embedding/embedding.h"
#include "ops/loss/cross_entropy.h"
#include "ops/reduce/softmax.h"
#include "runtime/error.h"
#include "tests/common/op_test_util.h"
#include "tests/common/test_util.h"

namespace zt {
namespace {

using Values = std::vector<double>;
using Pair = testing::CpuGpuPair;
using testing::error_of;
using testing::expect_gpu_matches;
using testing::expect_no_nan;
using testing::gpu_tolerance;
using testing::random_pair;

class LossGpu : public testing::PoisonedGpuTest {};

// Integers uniform in [0, limit); with ignore_every > 0, every ignore_every-th is -100
// (ignore_every 1: all of them).
Pair random_indices(const Shape& shape, std::uint64_t seed, std::int64_t limit, DType dtype, int ignore_every = 0) {
  Values v = Tensor::uniform(shape, seed, 0, 0.0, static_cast<double>(limit), DType::kF64).to_vector();
  for (std::size_t i = 0; i < v.size(); ++i) {
    bool ignored = ignore_every > 0 && (i + 1) % static_cast<std::size_t>(ignore_every) == 0;
    v[i] = ignored ? -100 : std::floor(v[i]);
  }
  Tensor cpu = Tensor::from_values(v, shape, dtype);
  return {cpu, cpu.to(Device::cuda())};
}

TEST_F(LossGpu, EmbeddingForwardAndBothBackwardModesMatchCpu) {
  ZT_SKIP_WITHOUT_GPU();
  const std::int64_t vocab = 517, hidden = 129;
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16})
    for (DType id_dtype : {DType::kI32, DType::kI64}) {
      std::string what = std::string(dtype_name(dtype)) + " ids " + dtype_name(id_dtype);
      Pair weight = random_pair({vocab, hidden}, 1, dtype);
      Pair ids = random_indices({3, 1000}, 2, vocab / 2, id_dtype);  // many repeats, half the rows unused
      Pair grad = random_pair({3, 1000, hidden}, 3, dtype);
      Tensor out = ops::embedding_forward(weight.gpu, ids.gpu);
      expect_no_nan(out, what);
      EXPECT_EQ(out.to_vector(), ops::embedding_forward(weight.cpu, ids.cpu).to_vector()) << what;
      Tensor expected = ops::embedding_backward(grad.cpu, ids.cpu, vocab);
      expect_gpu_matches(ops::embedding_backward(grad.gpu, ids.gpu, vocab), expected, gpu_tolerance(dtype),
                         what + " atomic");
      Tensor first = ops::embedding_backward(grad.gpu, ids.gpu, vocab, true);
      Tensor second = ops::embedding_backward(grad.gpu, ids.gpu, vocab, true);
      expect_gpu_matches(first, expected, gpu_tolerance(dtype), what + " deterministic");
      EXPECT_EQ(first.to_vector(), second.to_vector()) << what << ": deterministic runs differ";
    }
}

// A sink (a trained table's float32 gradient buffer) gets the same sums added, in either mode;
// rows of ids that never occur keep their values, and the ordered mode repeats bit for bit.
TEST_F(LossGpu, EmbeddingBackwardIntoASinkMatchesCpu) {
  ZT_SKIP_WITHOUT_GPU();
  const std::int64_t vocab = 517, hidden = 129;
  for (DType dtype : {DType::kF32, DType::kBF16})
    for (bool deterministic : {false, true}) {
      const std::string what = std::string(dtype_name(dtype)) + (deterministic ? " ordered" : " atomic");
      Pair ids = random_indices({3, 1000}, 12, vocab / 2, DType::kI64);  // half the rows unused
      Pair grad = random_pair({3, 1000, hidden}, 13, dtype);
      Pair start = random_pair({vocab, hidden}, 14, DType::kF32);
      Tensor cpu_sink = start.cpu.clone(), gpu_sink = start.gpu.clone();
      // The CPU adds its dense gradient rounded to grad's dtype; the GPU its float32 sums: the
      // reference takes float32 rows.
      EXPECT_FALSE(
          ops::embedding_backward(grad.cpu.to(DType::kF32), ids.cpu, vocab, deterministic, cpu_sink).defined());
      EXPECT_FALSE(ops::embedding_backward(grad.gpu, ids.gpu, vocab, deterministic, gpu_sink).defined()) << what;
      expect_gpu_matches(gpu_sink, cpu_sink, 1e-4, what);
      const Values before = start.cpu.to_vector(), after = gpu_sink.to_vector();
      for (std::int64_t c = 0; c < hidden; ++c)  // the last row's id never occurs
        EXPECT_EQ(after[(vocab - 1) * hidden + c], before[(vocab - 1) * hidden + c]) << what;
      if (deterministic) {
        Tensor repeat = start.gpu.clone();
        ops::embedding_backward(grad.gpu, ids.gpu, vocab, true, repeat);
        EXPECT_EQ(repeat.to_vector(), after) << what << ": ordered runs differ";
      }
    }
}

TEST_F(LossGpu, EmbeddingEdgeShapes) {
  ZT_SKIP_WITHOUT_GPU();
  Pair weight = random_pair({1, 1}, 4, DType::kF32);
  Pair ids = random_indices({5}, 5, 1, DType::kI64);
  EXPECT_EQ(ops::embedding_forward(weight.gpu, ids.gpu).to_vector(), Values(5, weight.cpu.item()));
  Pair grad = random_pair({5, 1}, 6, DType::kF32);
  expect_gpu_matches(ops::embedding_backward(grad.gpu, ids.gpu, 3, true), ops::embedding_backward(grad.cpu, ids.cpu, 3),
                     1e-5, "vocab 3, one id");
  Tensor none = Tensor::zeros({0}, DType::kI64, Device::cuda());
  EXPECT_EQ(ops::embedding_backward(Tensor::zeros({0, 4}, DType::kF32, Device::cuda()), none, 2, true).to_vector(),
            Values(8, 0.0));
}

TEST_F(LossGpu, EmbeddingOutOfRangeIdIsAnErrorNotAWrongRow) {
  ZT_SKIP_WITHOUT_GPU();
  Pair weight = random_pair({100, 8}, 7, DType::kBF16);
  Values v(4096, 3.0);
  v[2049] = 100;
  v[3000] = -4;
  Tensor ids = Tensor::from_values(v, {2, 2048}, DType::kI64).to(Device::cuda());
  std::string msg = error_of([&] { ops::embedding_forward(weight.gpu, ids); });
  EXPECT_NE(msg.find("id 100 at position [1, 1]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("100 rows"), std::string::npos) << msg;
  msg = error_of([&] {
    ops::embedding_backward(Tensor::zeros({2, 2048, 8}, DType::kBF16, Device::cuda()), ids, 100, true);
  });
  EXPECT_NE(msg.find("id 100 at position [1, 1]"), std::string::npos) << msg;
}

TEST_F(LossGpu, SoftmaxForwardAndBackwardMatchCpu) {
  ZT_SKIP_WITHOUT_GPU();
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16})
    for (const Shape& shape : {Shape{5, 1}, Shape{3, 7, 33}, Shape{2, 300}, Shape{3, 152064}, Shape{1}}) {
      std::string what = std::string(dtype_name(dtype)) + " " + shape_str(shape);
      Pair x = random_pair(shape, 8, dtype, /*mean=*/0.0, /*std_dev=*/3.0), gy = random_pair(shape, 9, dtype);
      Tensor y = ops::softmax_forward(x.gpu), y_cpu = ops::softmax_forward(x.cpu);
      expect_gpu_matches(y, y_cpu, gpu_tolerance(dtype), what + " forward");
      // Backward from the same y on both sides.
      expect_gpu_matches(ops::softmax_backward(gy.gpu, y_cpu.to(Device::cuda())), ops::softmax_backward(gy.cpu, y_cpu),
                         gpu_tolerance(dtype), what + " backward");
    }
  Pair x = random_pair({40, 6}, 10, DType::kF32);
  expect_gpu_matches(ops::softmax_forward(x.gpu.transpose(0, 1)), ops::softmax_forward(x.cpu.transpose(0, 1)), 1e-5,
                     "transposed view");
}

void check_cross_entropy(DType dtype, DType label_dtype, ops::Reduction reduction, int ignore_every) {
  const std::int64_t tokens = 7, vocab = 152064;
  std::string what = std::string(dtype_name(dtype)) + " labels " + dtype_name(label_dtype) +
                     (reduction == ops::Reduction::kMean ? " mean" : " sum") + " ignore every " +
                     std::to_string(ignore_every);
  Pair logits = random_pair({tokens, vocab}, 11, dtype, /*mean=*/0.0, /*std_dev=*/4.0);
  Pair labels = random_indices({tokens}, 12, vocab, label_dtype, ignore_every);
  ops::CrossEntropyOptions options{reduction, -100};
  ops::CrossEntropyOutput gpu = ops::cross_entropy_forward(logits.gpu, labels.gpu, options);
  ops::CrossEntropyOutput cpu = ops::cross_entropy_forward(logits.cpu, labels.cpu, options);
  expect_gpu_matches(gpu.logsumexp, cpu.logsumexp, 1e-5, what + " logsumexp");
  EXPECT_EQ(gpu.valid_count.item(), cpu.valid_count.item()) << what;
  expect_no_nan(gpu.loss, what + " loss");
  if (ignore_every == 1) {
    EXPECT_EQ(gpu.loss.item(), 0.0) << what;
  } else {
    EXPECT_NEAR(gpu.loss.item(), cpu.loss.item(), 1e-5 * std::abs(cpu.loss.item())) << what;
  }
  Tensor grad_loss = Tensor::from_values({1.5}, {}, DType::kF32);
  Tensor grad = ops::cross_entropy_backward(grad_loss.to(Device::cuda()), logits.gpu, labels.gpu, gpu.logsumexp,
                                            gpu.valid_count, options);
  Tensor expected =
      ops::cross_entropy_backward(grad_loss, logits.cpu, labels.cpu, cpu.logsumexp, cpu.valid_count, options);
  expect_gpu_matches(grad, expected, gpu_tolerance(dtype), what + " grad");
  if (ignore_every == 1) {
    EXPECT_EQ(grad.to_vector(), Values(tokens * vocab, 0.0)) << what;
  }
}

TEST_F(LossGpu, CrossEntropyOnAQwenSizedVocabulary) {
  ZT_SKIP_WITHOUT_GPU();
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16})
    for (ops::Reduction reduction : {ops::Reduction::kMean, ops::Reduction::kSum}) {
      check_cross_entropy(dtype, DType::kI64, reduction, 3);  // tokens 2 and 5 ignored
      check_cross_entropy(dtype, DType::kI32, reduction, 0);
    }
  check_cross_entropy(DType::kBF16, DType::kI64, ops::Reduction::kMean, 1);  // all ignored
  check_cross_entropy(DType::kF32, DType::kI32, ops::Reduction::kSum, 1);
}

TEST_F(LossGpu, CrossEntropyBadLabelIsAnError) {
  ZT_SKIP_WITHOUT_GPU();
  Tensor logits = Tensor::zeros({3, 10}, DType::kBF16, Device::cuda());
  Tensor labels = Tensor::from_values({1, -100, 10}, {3}, DType::kI64).to(Device::cuda());
  std::string msg = error_of([&] { ops::cross_entropy_forward(logits, labels); });
  EXPECT_NE(msg.find("token 2 has label 10"), std::string::npos) << msg;
  Tensor f64 = Tensor::zeros({3, 10}, DType::kF64, Device::cuda());
  msg = error_of([&] { ops::cross_entropy_forward(f64, labels); });
  EXPECT_NE(msg.find("float64"), std::string::npos) << msg;
}

}  // namespace
}  // namespace zt
