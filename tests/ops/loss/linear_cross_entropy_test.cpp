// The fused linear + cross-entropy on the CPU: equal to the unfused ops (linear, then
// cross_entropy) in float64 for both reductions, ignored labels and a gradient scale;
// gradients against central finite differences; all-ignored and empty batches; low-precision
// inputs; argument errors; and the autograd wrapper with a tied embedding.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "cuda/loss/linear_cross_entropy.cuh"
#include "ops/gemm/linear.h"
#include "ops/loss/cross_entropy.h"
#include "ops/loss/linear_cross_entropy.h"
#include "tests/common/gradcheck.h"
#include "tests/common/op_test_util.h"

namespace zt {
namespace {

using testing::error_of;
using testing::expect_mentions;
using testing::random_tensor;

struct Case {
  std::int64_t tokens, vocab, hidden;
  std::string str() const {
    return "T " + std::to_string(tokens) + " V " + std::to_string(vocab) + " H " + std::to_string(hidden);
  }
};

// Labels in [0, vocab) with every third token ignored (-100).
Tensor labels_for(std::int64_t tokens, std::int64_t vocab, std::uint64_t seed, DType dtype = DType::kI64) {
  std::vector<double> values;
  for (std::int64_t t = 0; t < tokens; ++t)
    values.push_back(t % 3 == 1 ? -100.0 : static_cast<double>((t * 7 + static_cast<std::int64_t>(seed)) % vocab));
  return Tensor::from_values(values, {tokens}, dtype);
}

ops::LinearCrossEntropyOptions options_of(ops::Reduction reduction, double grad_scale = 1.0) {
  ops::LinearCrossEntropyOptions options;
  options.reduction = reduction;
  options.grad_scale = grad_scale;
  return options;
}

constexpr ops::LinearCrossEntropyGradsNeeded kBoth{true, true};

// The unfused path: logits = linear(hidden, weight), then cross_entropy and its backward.
struct Unfused {
  double loss;
  Tensor grad_hidden, grad_weight;
};
Unfused unfused(const Tensor& hidden, const Tensor& weight, const Tensor& labels, ops::Reduction reduction,
                double grad_loss) {
  ops::CrossEntropyOptions ce{reduction, -100};
  Tensor logits = ops::linear_forward(hidden, weight);
  ops::CrossEntropyOutput out = ops::cross_entropy_forward(logits, labels, ce);
  Tensor dlogits = ops::cross_entropy_backward(Tensor::from_values({grad_loss}, {}, out.loss.dtype()), logits, labels,
                                               out.logsumexp, out.valid_count, ce);
  ops::LinearGrads grads = ops::linear_backward(dlogits, hidden, weight, {true, true, false});
  return {out.loss.item(), grads.grad_x, grads.grad_weight};
}

TEST(LinearCrossEntropy, MatchesUnfusedOpsInFloat64) {
  const std::vector<Case> cases = {{7, 11, 5}, {1, 1, 3}, {13, 29, 8}, {4, 2, 1}};
  std::uint64_t seed = 10;
  for (const Case& c : cases) {
    for (ops::Reduction reduction : {ops::Reduction::kMean, ops::Reduction::kSum}) {
      for (double grad_scale : {1.0, 8.0}) {
        const std::string what =
            c.str() + (reduction == ops::Reduction::kMean ? " mean" : " sum") + " scale " + std::to_string(grad_scale);
        Tensor hidden = random_tensor({c.tokens, c.hidden}, ++seed),
               weight = random_tensor({c.vocab, c.hidden}, ++seed);
        Tensor labels = labels_for(c.tokens, c.vocab, ++seed);
        ops::LinearCrossEntropyOptions options = options_of(reduction, grad_scale);
        ops::LinearCrossEntropyOutput fused = ops::linear_cross_entropy_forward(hidden, weight, labels, options, kBoth);
        const double grad_loss = 0.75;
        Unfused want = unfused(hidden, weight, labels, reduction, grad_loss);
        EXPECT_NEAR(fused.loss.item(), want.loss, 1e-12 * std::max(1.0, std::abs(want.loss))) << what;
        EXPECT_EQ(fused.loss.dtype(), DType::kF64) << what;
        EXPECT_EQ(fused.valid_count.item(), static_cast<double>(c.tokens - (c.tokens + 1) / 3)) << what;
        // Forward's gradients are of loss · grad_scale; backward turns them into grad_loss's.
        Unfused scaled = unfused(hidden, weight, labels, reduction, grad_scale);
        EXPECT_LE(max_abs_diff(fused.grad_hidden, scaled.grad_hidden), 1e-12) << what;
        EXPECT_LE(max_abs_diff(fused.grad_weight, scaled.grad_weight), 1e-12) << what;
        ops::LinearCrossEntropyGrads grads = ops::linear_cross_entropy_backward(
            Tensor::from_values({grad_loss}, {}, DType::kF64), fused, DType::kF64, options);
        EXPECT_LE(max_abs_diff(grads.grad_hidden, want.grad_hidden), 1e-12) << what;
        EXPECT_LE(max_abs_diff(grads.grad_weight, want.grad_weight), 1e-12) << what;
      }
    }
  }
}

// The gradients of hidden and weight (inputs: hidden, weight, labels) against finite differences
// of the loss under `options`.
void expect_gradients_match_under(const ops::LinearCrossEntropyOptions& options, const std::string& what,
                                  const std::vector<Tensor>& inputs) {
  auto forward = [&](const std::vector<Tensor>& in) {
    return ops::linear_cross_entropy_forward(in[0], in[1], in[2], options).loss;
  };
  auto backward = [&](const std::vector<Tensor>& in, const Tensor& probe) {
    ops::LinearCrossEntropyOutput out = ops::linear_cross_entropy_forward(in[0], in[1], in[2], options, kBoth);
    ops::LinearCrossEntropyGrads g = ops::linear_cross_entropy_backward(probe, out, DType::kF64, options);
    return std::vector<Tensor>{g.grad_hidden, g.grad_weight, Tensor()};
  };
  testing::expect_gradients_match(what, forward, backward, inputs, {true, true, false});
}

TEST(LinearCrossEntropy, GradientsMatchFiniteDifferences) {
  for (ops::Reduction reduction : {ops::Reduction::kMean, ops::Reduction::kSum}) {
    expect_gradients_match_under(options_of(reduction, 3.0), "linear_cross_entropy",
                                 {random_tensor({6, 4}, 1), random_tensor({9, 4}, 2), labels_for(6, 9, 3)});
  }
}

// Per-token weights (preference training's per-sequence factors, of either sign): the loss is
// the weighted sum, each token's loss and gradient rows scale by its weight; gradients still
// match finite differences.
TEST(LinearCrossEntropy, TokenWeightsScaleEachTokensLossAndGradient) {
  const Tensor hidden = random_tensor({6, 4}, 1), weight = random_tensor({9, 4}, 2), labels = labels_for(6, 9, 3);
  const std::vector<double> w = {0.5, -2.0, 0.0, 1.25, -0.75, 3.0};
  ops::LinearCrossEntropyOptions plain = options_of(ops::Reduction::kSum, 1.0);
  plain.token_losses = true;
  ops::LinearCrossEntropyOptions weighted = plain;
  weighted.token_weights = Tensor::from_values(w, {6}, DType::kF64);
  const auto base = ops::linear_cross_entropy_forward(hidden, weight, labels, plain, kBoth);
  const auto out = ops::linear_cross_entropy_forward(hidden, weight, labels, weighted, kBoth);
  const std::vector<double> base_tokens = base.token_loss.to_vector(), tokens = out.token_loss.to_vector();
  const std::vector<double> base_rows = base.grad_hidden.to_vector(), rows = out.grad_hidden.to_vector();
  double sum = 0.0;
  for (std::size_t t = 0; t < 6; ++t) {
    EXPECT_NEAR(tokens[t], w[t] * base_tokens[t], 1e-12) << t;
    sum += tokens[t];
    for (std::size_t k = 0; k < 4; ++k) EXPECT_NEAR(rows[t * 4 + k], w[t] * base_rows[t * 4 + k], 1e-12) << t;
  }
  EXPECT_NEAR(out.loss.item(), sum, 1e-12);
  expect_gradients_match_under(weighted, "weighted linear_cross_entropy", {hidden, weight, labels});
  weighted.token_weights = Tensor::from_values(w, {6}, DType::kF32);
  EXPECT_THROW(ops::linear_cross_entropy_forward(hidden, weight, labels, weighted), Error);  // not the loss's dtype
}

TEST(LinearCrossEntropy, AllIgnoredGivesZeroLossAndZeroGradients) {
  Tensor hidden = random_tensor({5, 3}, 4), weight = random_tensor({7, 3}, 5);
  Tensor labels = Tensor::full({5}, -100, DType::kI64);
  for (ops::Reduction reduction : {ops::Reduction::kMean, ops::Reduction::kSum}) {
    ops::LinearCrossEntropyOutput out =
        ops::linear_cross_entropy_forward(hidden, weight, labels, options_of(reduction), kBoth);
    EXPECT_EQ(out.loss.item(), 0.0);
    EXPECT_EQ(out.valid_count.item(), 0.0);
    EXPECT_EQ(max_abs_diff(out.grad_hidden, Tensor::zeros({5, 3}, DType::kF64)), 0.0);
    EXPECT_EQ(max_abs_diff(out.grad_weight, Tensor::zeros({7, 3}, DType::kF64)), 0.0);
  }
}

TEST(LinearCrossEntropy, EmptyBatchAndOnlyTheGradientsAsked) {
  Tensor weight = random_tensor({4, 3}, 6);
  ops::LinearCrossEntropyOutput empty = ops::linear_cross_entropy_forward(Tensor::empty({0, 3}, DType::kF64), weight,
                                                                          Tensor::empty({0}, DType::kI64), {}, kBoth);
  EXPECT_EQ(empty.loss.item(), 0.0);
  EXPECT_EQ(empty.grad_hidden.shape(), (Shape{0, 3}));
  EXPECT_EQ(max_abs_diff(empty.grad_weight, Tensor::zeros({4, 3}, DType::kF64)), 0.0);

  Tensor hidden = random_tensor({3, 3}, 7), labels = labels_for(3, 4, 8);
  ops::LinearCrossEntropyOutput loss_only = ops::linear_cross_entropy_forward(hidden, weight, labels);
  EXPECT_FALSE(loss_only.grad_hidden.defined());
  EXPECT_FALSE(loss_only.grad_weight.defined());
  ops::LinearCrossEntropyOutput frozen = ops::linear_cross_entropy_forward(hidden, weight, labels, {}, {true, false});
  EXPECT_TRUE(frozen.grad_hidden.defined());
  EXPECT_FALSE(frozen.grad_weight.defined());
  ops::LinearCrossEntropyGrads grads =
      ops::linear_cross_entropy_backward(Tensor::from_values({1.0}, {}, DType::kF64), frozen, DType::kF64);
  EXPECT_FALSE(grads.grad_weight.defined());
  EXPECT_EQ(max_abs_diff(grads.grad_hidden, unfused(hidden, weight, labels, ops::Reduction::kMean, 1.0).grad_hidden),
            0.0);
}

TEST(LinearCrossEntropy, LowPrecisionInputsRoundOnceFromFloat64) {
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    Tensor hidden = random_tensor({9, 6}, 9, dtype), weight = random_tensor({13, 6}, 10, dtype);
    Tensor labels = labels_for(9, 13, 11, DType::kI32);
    ops::LinearCrossEntropyOutput low = ops::linear_cross_entropy_forward(hidden, weight, labels, {}, kBoth);
    ops::LinearCrossEntropyOutput exact =
        ops::linear_cross_entropy_forward(hidden.to(DType::kF64), weight.to(DType::kF64), labels, {}, kBoth);
    EXPECT_EQ(low.loss.dtype(), DType::kF32);
    EXPECT_EQ(low.grad_hidden.dtype(), dtype);
    EXPECT_EQ(low.grad_weight.dtype(), DType::kF32);  // accumulated in float32, cast in backward
    EXPECT_NEAR(low.loss.item(), exact.loss.item(), 1e-6 * std::abs(exact.loss.item()));
    EXPECT_LE(relative_error(low.grad_hidden, exact.grad_hidden), dtype == DType::kF32 ? 1e-7 : 4e-3);
    EXPECT_LE(relative_error(low.grad_weight, exact.grad_weight), 1e-7);
    ops::LinearCrossEntropyGrads grads =
        ops::linear_cross_entropy_backward(Tensor::from_values({1.0}, {}, DType::kF32), low, dtype);
    EXPECT_EQ(grads.grad_weight.dtype(), dtype);
  }
}

// On the CPU the sink gets what delivery would have added: the scaled gradient rounded to the
// weight's dtype (the GPU adds its float32 value: linear_cross_entropy_gpu_test.cpp).
TEST(LinearCrossEntropy, TheWeightGradientGoesIntoASink) {
  Tensor hidden = random_tensor({7, 5}, 31, DType::kBF16), weight = random_tensor({11, 5}, 32, DType::kBF16);
  Tensor labels = labels_for(7, 11, 33);
  ops::LinearCrossEntropyOptions options;
  options.grad_scale = 4.0;
  const ops::LinearCrossEntropyOutput out = ops::linear_cross_entropy_forward(hidden, weight, labels, options, kBoth);
  const Tensor grad_loss = Tensor::from_values({2.0}, {}, DType::kF32);
  Tensor sink = random_tensor({11, 5}, 34, DType::kF32);
  const std::vector<double> start = sink.to_vector();
  const ops::LinearCrossEntropyGrads into =
      ops::linear_cross_entropy_backward(grad_loss, out, DType::kBF16, options, sink);
  EXPECT_FALSE(into.grad_weight.defined());
  ASSERT_TRUE(into.grad_hidden.defined());
  const ops::LinearCrossEntropyGrads plain = ops::linear_cross_entropy_backward(grad_loss, out, DType::kBF16, options);
  const std::vector<double> got = sink.to_vector(), delivered = plain.grad_weight.to_vector();
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(got[i], static_cast<double>(static_cast<float>(start[i]) + static_cast<float>(delivered[i]))) << i;
  EXPECT_EQ(max_abs_diff(into.grad_hidden, plain.grad_hidden), 0.0);  // the hidden gradient unchanged
  const std::string msg = error_of([&] {
    ops::linear_cross_entropy_backward(grad_loss, out, DType::kBF16, options, Tensor::zeros({5, 11}, DType::kF32));
  });
  expect_mentions(msg, {"sink", "[5, 11]", "[11, 5]"});
}

TEST(LinearCrossEntropy, ErrorsNameTheArgumentAndTheFix) {
  Tensor hidden = random_tensor({4, 3}, 12), weight = random_tensor({5, 3}, 13), labels = labels_for(4, 5, 14);
  expect_mentions(
      error_of([&] {
        ops::linear_cross_entropy_forward(hidden, weight, Tensor::from_values({0, 1, 5, 2}, {4}, DType::kI64));
      }),
      {"token 2", "label 5", "[0, 5)", "ignore_index -100"});
  expect_mentions(error_of([&] {
                    ops::linear_cross_entropy_forward(hidden, random_tensor({5, 4}, 15), labels);
                  }),
                  {"weight", "[5, 4]", "hidden_size"});
  expect_mentions(error_of([&] { ops::linear_cross_entropy_forward(hidden, weight.to(DType::kF32), labels); }),
                  {"float32", "float64"});
  expect_mentions(error_of([&] { ops::linear_cross_entropy_forward(hidden, weight, labels.to(DType::kF32)); }),
                  {"labels must be int32 or int64"});
  expect_mentions(error_of([&] { ops::linear_cross_entropy_forward(hidden, weight, labels_for(3, 5, 1)); }),
                  {"labels", "one label per row"});
  ops::LinearCrossEntropyOptions bad_chunk;
  bad_chunk.chunk_tokens = -2;
  expect_mentions(error_of([&] { ops::linear_cross_entropy_forward(hidden, weight, labels, bad_chunk); }),
                  {"chunk_tokens is -2"});
  ops::LinearCrossEntropyOptions bad_scale;
  bad_scale.grad_scale = 0.0;
  expect_mentions(error_of([&] { ops::linear_cross_entropy_forward(hidden, weight, labels, bad_scale); }),
                  {"grad_scale", "finite and > 0"});
  ops::LinearCrossEntropyOutput out = ops::linear_cross_entropy_forward(hidden, weight, labels, {}, kBoth);
  expect_mentions(error_of([&] {
                    ops::linear_cross_entropy_backward(Tensor::from_values({1.0}, {}, DType::kF32), out, DType::kF64);
                  }),
                  {"grad_loss", "float32", "float64"});
}

// ---- the autograd wrapper ----

// The GPU's automatic chunking (a host-side choice): the fewest chunks within the budget (1 GiB
// with the weight's gradient, 256 MiB with the weight frozen), as even as multiples of 128
// allow, so no chunk is left far smaller than the others.
TEST(LinearCrossEntropy, AutomaticChunksAreFewAndEven) {
  const std::int64_t vocab = 151936;
  for (bool weight_gradient : {true, false})
    for (bool float32_logits : {false, true})
      for (std::int64_t tokens : {1, 100, 2048, 8192, 16384, 20000}) {
        const std::int64_t chunk =
            cuda::default_chunk_tokens(tokens, vocab, float32_logits, DType::kBF16, weight_gradient);
        const std::string what = std::to_string(tokens) + " tokens, float32 logits " + std::to_string(float32_logits) +
                                 ", weight gradient " + std::to_string(weight_gradient);
        const std::size_t budget = weight_gradient ? std::size_t{1} << 30 : std::size_t{256} << 20;
        EXPECT_LE(cuda::chunk_logits_bytes(chunk, vocab, float32_logits, DType::kBF16), budget) << what;
        const std::int64_t fit =
            static_cast<std::int64_t>(budget / cuda::chunk_logits_bytes(1, vocab, float32_logits, DType::kBF16)) / 128 *
            128;
        const std::int64_t fewest = (tokens + fit - 1) / fit;
        const std::int64_t chunks = (tokens + chunk - 1) / chunk;
        EXPECT_EQ(chunks, fewest) << what;
        if (chunks > 1) {
          EXPECT_EQ(chunk % 128, 0) << what;
          EXPECT_GE(tokens - (chunks - 1) * chunk, chunk - 128 * chunks) << what << ": the last chunk is " << chunk;
        } else {
          EXPECT_EQ(chunk, tokens) << what;
        }
      }
  EXPECT_EQ(cuda::default_chunk_tokens(8192, vocab, false, DType::kBF16, true), 2816);
  EXPECT_EQ(cuda::default_chunk_tokens(8192, vocab, false, DType::kBF16, false), 768);
}

TEST(LinearCrossEntropyAutograd, TiedEmbeddingGetsBothGradientsLikeTheUnfusedTape) {
  Tensor table = random_tensor({11, 6}, 20), ids = Tensor::from_values({3, 0, 10, 3, 7}, {5}, DType::kI64);
  Tensor mix = random_tensor({6, 6}, 21), labels = labels_for(5, 11, 22);
  auto run = [&](bool fused, autograd::Variable& embedding, autograd::Variable& proj) {
    embedding = autograd::Variable(table, true, "embedding");
    proj = autograd::Variable(mix, true, "proj");
    autograd::Variable h = autograd::linear(autograd::embedding(embedding, ids), proj);
    autograd::Variable loss = fused ? autograd::linear_cross_entropy(h, embedding, labels)
                                    : autograd::cross_entropy(autograd::linear(h, embedding), labels);
    autograd::scale(loss, 2.5).backward();
    return loss.data().item();
  };
  autograd::Variable e_fused, p_fused, e_plain, p_plain;
  double fused_loss = run(true, e_fused, p_fused), plain_loss = run(false, e_plain, p_plain);
  EXPECT_NEAR(fused_loss, plain_loss, 1e-12);
  EXPECT_LE(max_abs_diff(e_fused.grad(), e_plain.grad()), 1e-12);  // lookup and lm_head shares summed
  EXPECT_LE(max_abs_diff(p_fused.grad(), p_plain.grad()), 1e-12);
}

TEST(LinearCrossEntropyAutograd, ComputesNoGradientsWhenNotRecordingOrFrozen) {
  Tensor hidden = random_tensor({4, 3}, 23), weight = random_tensor({5, 3}, 24), labels = labels_for(4, 5, 25);
  {
    autograd::NoGradGuard no_grad;
    autograd::Variable loss =
        autograd::linear_cross_entropy(autograd::Variable(hidden, true), autograd::Variable(weight, true), labels);
    EXPECT_FALSE(loss.requires_grad());
  }
  autograd::Variable h(hidden, true, "h"), w(weight, false, "lm_head");
  autograd::linear_cross_entropy(h, w, labels).backward();
  EXPECT_FALSE(w.grad().defined());
  EXPECT_LE(max_abs_diff(h.grad(), unfused(hidden, weight, labels, ops::Reduction::kMean, 1.0).grad_hidden), 1e-12);
}

}  // namespace
}  // namespace zt
