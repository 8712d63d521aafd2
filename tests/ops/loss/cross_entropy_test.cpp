// Embedding, softmax and cross-entropy on the CPU: hand-computed values, finite-difference
// gradients in float64 (repeated ids, ignored labels, both reductions), views, and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "ops/embedding/embedding.h"
#include "ops/loss/cross_entropy.h"
#include "ops/reduce/softmax.h"
#include "runtime/error.h"
#include "tests/common/gradcheck.h"
#include "tests/common/op_test_util.h"

namespace zt {
namespace {

using Values = std::vector<double>;
using namespace testing;  // the helpers of tests/common/

// ---- embedding ----

TEST(Embedding, HandComputedLookupAndRepeatedIdGradient) {
  Tensor weight = Tensor::from_values({1, 2, 3, 4, 5, 6}, {3, 2}, DType::kF32);
  for (DType id_dtype : {DType::kI32, DType::kI64}) {
    Tensor ids = Tensor::from_values({2, 0, 2}, {3}, id_dtype);
    Tensor out = ops::embedding_forward(weight, ids);
    EXPECT_EQ(out.shape(), (Shape{3, 2}));
    EXPECT_EQ(out.to_vector(), (Values{5, 6, 1, 2, 5, 6}));
    Tensor dweight = ops::embedding_backward(Tensor::from_values({1, 2, 3, 4, 5, 6}, {3, 2}, DType::kF32), ids, 3);
    EXPECT_EQ(dweight.to_vector(), (Values{3, 4, 0, 0, 6, 8}));
  }
}

TEST(Embedding, GradientWithRepeatedIdsOfAnyShape) {
  Tensor ids = Tensor::from_values({3, 1, 3, 0, 3, 1}, {2, 3}, DType::kI64);
  auto forward = [](const std::vector<Tensor>& in) { return ops::embedding_forward(in[0], in[1]); };
  auto backward = [](const std::vector<Tensor>& in, const Tensor& g) {
    return std::vector<Tensor>{ops::embedding_backward(g, in[1], in[0].size(0)), Tensor()};
  };
  expect_gradients_match("embedding", forward, backward, {random_tensor({5, 4}, 1), ids}, {true, false});
}

TEST(Embedding, GradientRowsGoIntoASinkInsteadOfADenseGradient) {
  Tensor ids = Tensor::from_values({2, 0, 2, 3}, {2, 2}, DType::kI64);
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    Tensor grad = random_tensor({2, 2, 3}, 21, dtype);
    Tensor sink = random_tensor({4, 3}, 22, DType::kF32);
    const Tensor before = sink.clone();
    Tensor into = ops::embedding_backward(grad, ids, 4, false, sink);
    EXPECT_FALSE(into.defined());
    const Tensor dense = ops::embedding_backward(grad, ids, 4);  // rounded to grad's dtype, as delivered
    const Values got = sink.to_vector(), start = before.to_vector(), rows = dense.to_vector();
    for (std::size_t i = 0; i < got.size(); ++i)
      EXPECT_FLOAT_EQ(got[i], start[i] + rows[i]) << dtype_name(dtype) << " " << i;
    Tensor again = ops::embedding_backward(grad, ids, 4, true, sink);  // the ordered sums add the same way
    EXPECT_FALSE(again.defined());
    const Values twice = sink.to_vector();
    for (std::size_t i = 0; i < twice.size(); ++i) EXPECT_FLOAT_EQ(twice[i], got[i] + rows[i]) << i;
  }
  std::string msg = error_of([&] {
    ops::embedding_backward(random_tensor({4, 3}, 23), ids.reshape({4}), 4, false, Tensor::zeros({4, 2}, DType::kF32));
  });
  expect_mentions(msg, {"sink", "[4, 2]", "[4, 3]"});
  msg = error_of([&] {
    ops::embedding_backward(random_tensor({4, 3}, 23), ids.reshape({4}), 4, false, Tensor::zeros({4, 3}, DType::kBF16));
  });
  expect_mentions(msg, {"sink", "float32"});
}

TEST(Embedding, StridedIdsAndWeightMatchContiguousCopies) {
  Tensor weight = random_tensor({6, 9}, 2, DType::kF32).narrow(1, 1, 5);  // row stride 9
  Tensor ids = Tensor::from_values({0, 5, 1, 4, 2, 3}, {2, 3}, DType::kI32).transpose(0, 1);
  EXPECT_EQ(ops::embedding_forward(weight, ids).to_vector(),
            ops::embedding_forward(weight.contiguous(), ids.contiguous()).to_vector());
  Tensor grad = random_tensor({3, 2, 5}, 3, DType::kF32).transpose(0, 1).contiguous().transpose(0, 1);
  EXPECT_EQ(ops::embedding_backward(grad, ids, 6).to_vector(),
            ops::embedding_backward(grad.contiguous(), ids.contiguous(), 6).to_vector());
}

TEST(Embedding, OutOfRangeIdsNameTheIdPositionAndVocabulary) {
  Tensor weight = random_tensor({10, 3}, 4);
  std::string msg = error_of([&] {
    ops::embedding_forward(weight, Tensor::from_values({1, 2, 3, 17}, {2, 2}, DType::kI64));
  });
  expect_mentions(msg, {"17", "[1, 1]", "10"});
  msg = error_of([&] { ops::embedding_forward(weight, Tensor::from_values({-1, 2}, {2}, DType::kI32)); });
  expect_mentions(msg, {"-1", "[0]", "10"});
  msg = error_of([&] {
    ops::embedding_backward(random_tensor({2, 3}, 5), Tensor::from_values({1, 10}, {2}, DType::kI64), 10);
  });
  expect_mentions(msg, {"id 10", "[1]", "10 rows"});
  msg = error_of([&] { ops::embedding_forward(weight, Tensor::from_values({1.0}, {1}, DType::kF32)); });
  expect_mentions(msg, {"int32 or int64", "float32"});
  msg = error_of([&] {
    ops::embedding_backward(random_tensor({2, 4}, 5), Tensor::from_values({1, 2, 3}, {3}, DType::kI64), 10);
  });
  expect_mentions(msg, {"[2, 4]", "[3]"});
}

// ---- softmax ----

TEST(Softmax, HandComputedValues) {
  Tensor y = ops::softmax_forward(Tensor::from_values({0, std::log(3.0), 5, 5}, {2, 2}, DType::kF64));
  Values v = y.to_vector();
  EXPECT_NEAR(v[0], 0.25, 1e-15);
  EXPECT_NEAR(v[1], 0.75, 1e-15);
  EXPECT_NEAR(v[2], 0.5, 1e-15);
  EXPECT_NEAR(v[3], 0.5, 1e-15);
  EXPECT_EQ(ops::softmax_forward(Tensor::from_values({1000, 1000}, {2}, DType::kF32)).to_vector(), (Values{0.5, 0.5}));
}

TEST(Softmax, Gradients) {
  auto forward = [](const std::vector<Tensor>& in) { return ops::softmax_forward(in[0]); };
  auto backward = [](const std::vector<Tensor>& in, const Tensor& g) {
    return std::vector<Tensor>{ops::softmax_backward(g, ops::softmax_forward(in[0]))};
  };
  expect_gradients_match("softmax [3, 7]", forward, backward, {random_tensor({3, 7}, 6)}, {true});
  expect_gradients_match("softmax [2, 3, 1]", forward, backward, {random_tensor({2, 3, 1}, 7)}, {true});
  expect_gradients_match("softmax [5]", forward, backward, {random_tensor({5}, 8)}, {true});
}

TEST(Softmax, TransposedInputMatchesContiguousCopyAndBf16RoundsOnce) {
  Tensor x = random_tensor({7, 4}, 9, DType::kF32).transpose(0, 1);
  EXPECT_EQ(ops::softmax_forward(x).to_vector(), ops::softmax_forward(x.contiguous()).to_vector());
  Tensor h = random_tensor({3, 5}, 10, DType::kBF16);
  EXPECT_EQ(ops::softmax_forward(h).to_vector(), ops::softmax_forward(h.to(DType::kF64)).to(DType::kBF16).to_vector());
  std::string msg = error_of([] { ops::softmax_backward(random_tensor({2, 3}, 1), random_tensor({3, 2}, 2)); });
  expect_mentions(msg, {"[2, 3]", "[3, 2]"});
}

// ---- cross-entropy ----

ops::CrossEntropyOptions options(ops::Reduction reduction, std::int64_t ignore_index = -100) {
  return {reduction, ignore_index};
}

TEST(CrossEntropy, HandComputedMeanSumAndIgnored) {
  Tensor logits = Tensor::from_values({0, std::log(3.0), 0, std::log(3.0), 1, 1}, {3, 2}, DType::kF64);
  Tensor labels = Tensor::from_values({1, 0, -100}, {3}, DType::kI64);
  ops::CrossEntropyOutput mean = ops::cross_entropy_forward(logits, labels);
  EXPECT_EQ(mean.loss.shape(), Shape{});
  EXPECT_NEAR(mean.loss.item(), (-std::log(0.75) - std::log(0.25)) / 2, 1e-14);
  EXPECT_EQ(mean.valid_count.item(), 2);
  EXPECT_NEAR(mean.logsumexp.to_vector()[2], 1 + std::log(2.0), 1e-14);
  ops::CrossEntropyOutput sum = ops::cross_entropy_forward(logits, labels, options(ops::Reduction::kSum));
  EXPECT_NEAR(sum.loss.item(), -std::log(0.75) - std::log(0.25), 1e-14);
  Tensor grad = ops::cross_entropy_backward(Tensor::from_values({2.0}, {}, DType::kF64), logits, labels, mean.logsumexp,
                                            mean.valid_count);
  Values g = grad.to_vector();
  Values expected{0.25, -0.25, -0.75, 0.75, 0, 0};  // (softmax - onehot) * 2 / 2
  for (std::size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], expected[i], 1e-14) << i;
  EXPECT_EQ(ops::cross_entropy_forward(logits.to(DType::kF32), labels).loss.dtype(), DType::kF32);
}

void check_gradients(const std::string& what, const Tensor& labels, ops::CrossEntropyOptions opts, std::uint64_t seed) {
  auto forward = [=](const std::vector<Tensor>& in) { return ops::cross_entropy_forward(in[0], in[1], opts).loss; };
  auto backward = [=](const std::vector<Tensor>& in, const Tensor& g) {
    ops::CrossEntropyOutput out = ops::cross_entropy_forward(in[0], in[1], opts);
    return std::vector<Tensor>{ops::cross_entropy_backward(g, in[0], in[1], out.logsumexp, out.valid_count, opts),
                               Tensor()};
  };
  expect_gradients_match(what, forward, backward, {random_tensor({labels.size(0), 7}, seed), labels}, {true, false});
}

TEST(CrossEntropy, GradientsMeanAndSumWithIgnoredTokens) {
  Tensor labels = Tensor::from_values({3, -100, 0, 6, -100}, {5}, DType::kI64);
  check_gradients("mean", labels, options(ops::Reduction::kMean), 11);
  check_gradients("sum", labels, options(ops::Reduction::kSum), 12);
  check_gradients("int32 labels, ignore_index 2", Tensor::from_values({2, 1, 5}, {3}, DType::kI32),
                  options(ops::Reduction::kMean, 2), 13);
}

TEST(CrossEntropy, AllIgnoredGivesZeroLossAndZeroGradientNotNan) {
  Tensor labels = Tensor::from_values({-100, -100, -100}, {3}, DType::kI64);
  Tensor logits = random_tensor({3, 5}, 14);
  for (ops::Reduction reduction : {ops::Reduction::kMean, ops::Reduction::kSum}) {
    ops::CrossEntropyOutput out = ops::cross_entropy_forward(logits, labels, options(reduction));
    EXPECT_EQ(out.loss.item(), 0.0);
    EXPECT_EQ(out.valid_count.item(), 0.0);
    Tensor grad = ops::cross_entropy_backward(Tensor::from_values({1.0}, {}, DType::kF64), logits, labels,
                                              out.logsumexp, out.valid_count, options(reduction));
    EXPECT_EQ(grad.to_vector(), Values(15, 0.0));
  }
  check_gradients("all ignored", labels, options(ops::Reduction::kMean), 15);
}

TEST(CrossEntropy, StridedLogitsMatchContiguousCopy) {
  Tensor logits = random_tensor({9, 4}, 16, DType::kF32).transpose(0, 1);  // [4, 9]
  Tensor labels = Tensor::from_values({8, 5, 0, 5, -100, 5, 3, 5}, {8}, DType::kI64).slice(0, 0, 8, 2);
  ops::CrossEntropyOutput view = ops::cross_entropy_forward(logits, labels);
  ops::CrossEntropyOutput copy = ops::cross_entropy_forward(logits.contiguous(), labels);
  EXPECT_EQ(view.loss.item(), copy.loss.item());
  Tensor g = Tensor::from_values({1.0}, {}, DType::kF32);
  EXPECT_EQ(ops::cross_entropy_backward(g, logits, labels, view.logsumexp, view.valid_count).to_vector(),
            ops::cross_entropy_backward(g, logits.contiguous(), labels, copy.logsumexp, copy.valid_count).to_vector());
}

TEST(CrossEntropy, BadLabelsNameTheTokenAndValue) {
  Tensor logits = random_tensor({4, 6}, 17);
  std::string msg = error_of([&] {
    ops::cross_entropy_forward(logits, Tensor::from_values({1, -100, 6, 2}, {4}, DType::kI64));
  });
  expect_mentions(msg, {"token 2", "label 6", "[0, 6)", "-100"});
  msg = error_of([&] { ops::cross_entropy_forward(logits, Tensor::from_values({1, -5, 0, 2}, {4}, DType::kI32)); });
  expect_mentions(msg, {"token 1", "label -5"});
  msg = error_of([&] { ops::cross_entropy_forward(logits, Tensor::from_values({1, 2, 3}, {3}, DType::kI64)); });
  expect_mentions(msg, {"[3]", "[4, 6]"});
  msg = error_of([&] { ops::cross_entropy_forward(logits, Tensor::from_values({1, 2, 3, 4}, {4}, DType::kF32)); });
  expect_mentions(msg, {"int32 or int64", "float32"});
}

}  // namespace
}  // namespace zt
