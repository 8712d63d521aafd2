// Attention on the CPU: forward against a naive reference that builds each sequence's full
// score matrix, hand-computed values, isolation between packed sequences, float64 gradient
// checks of every input including the prefix, and argument errors naming both values.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "ops/attention/attention.h"
#include "runtime/error.h"
#include "tests/common/gradcheck.h"
#include "tests/ops/attention/attention_test_util.h"

namespace zt {
namespace {

using testing::AttentionCase;
using testing::AttentionTensors;

struct Reference {
  std::vector<double> out;  // [total, heads, head_dim]
  std::vector<double> lse;  // [total, heads]
};

// Per (sequence, head): keys K = [prefix; own tokens], S = scale · Q Kᵀ with causal masking of
// own keys, P = softmax(S) row by row, O = P V. 16-bit inputs round P to their dtype first.
Reference naive_attention(const AttentionCase& c, const AttentionTensors& t, DType dtype) {
  const std::vector<double> q = t.q.to_vector(), k = t.k.to_vector(), v = t.v.to_vector();
  const std::vector<double> pk = c.prefix_len ? t.prefix.k.to_vector() : std::vector<double>();
  const std::vector<double> pv = c.prefix_len ? t.prefix.v.to_vector() : std::vector<double>();
  const std::int64_t H = c.heads, G = c.kv_heads, D = c.head_dim, P = c.prefix_len;
  const double scale = c.config().softmax_scale;
  Reference ref{std::vector<double>(q.size()), std::vector<double>(c.total() * H)};
  std::int64_t start = 0;
  for (std::int64_t b = 0; b < c.batch(); ++b) {
    const std::int64_t L = c.lengths[b], keys = P + L;
    for (std::int64_t h = 0; h < H; ++h) {
      const std::int64_t g = h / (H / G);
      auto key = [&](const std::vector<double>& own, const std::vector<double>& prefix, std::int64_t j,
                     std::int64_t d) {
        return j < P ? prefix[((b * P + j) * G + g) * D + d] : own[((start + j - P) * G + g) * D + d];
      };
      std::vector<double> scores(L * keys, -std::numeric_limits<double>::infinity());
      for (std::int64_t i = 0; i < L; ++i)
        for (std::int64_t j = 0; j < keys; ++j) {
          if (c.causal && j >= P && j - P > i) continue;
          double s = 0;
          for (std::int64_t d = 0; d < D; ++d) s += q[((start + i) * H + h) * D + d] * key(k, pk, j, d);
          scores[i * keys + j] = scale * s;
        }
      for (std::int64_t i = 0; i < L; ++i) {
        double max = -std::numeric_limits<double>::infinity(), sum = 0;
        for (std::int64_t j = 0; j < keys; ++j) max = std::max(max, scores[i * keys + j]);
        for (std::int64_t j = 0; j < keys; ++j) sum += std::exp(scores[i * keys + j] - max);
        ref.lse[(start + i) * H + h] = max + std::log(sum);
        for (std::int64_t j = 0; j < keys; ++j) {
          double p = std::exp(scores[i * keys + j] - max) / sum;
          if (dtype != DType::kF64) p = Tensor::from_values({p}, {1}, dtype).item();
          for (std::int64_t d = 0; d < D; ++d) ref.out[((start + i) * H + h) * D + d] += p * key(v, pv, j, d);
        }
      }
    }
    start += L;
  }
  return ref;
}

double relative_error(const std::vector<double>& a, const std::vector<double>& b) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff += (a[i] - b[i]) * (a[i] - b[i]);
    norm += b[i] * b[i];
  }
  return std::sqrt(diff / norm);
}

void expect_matches_reference(const AttentionCase& c, DType dtype, double tolerance) {
  AttentionTensors t = testing::random_attention_inputs(c, dtype, 7);
  ops::AttentionOutput got = ops::attention_forward(t.q, t.k, t.v, t.cu_seqlens, c.config(), t.prefix);
  Reference ref = naive_attention(c, t, dtype);
  ASSERT_EQ(got.out.shape(), t.q.shape()) << c.str();
  ASSERT_EQ(got.out.dtype(), dtype) << c.str();
  ASSERT_EQ(got.lse.shape(), (Shape{c.total(), c.heads})) << c.str();
  EXPECT_LE(relative_error(got.out.to_vector(), ref.out), tolerance) << dtype_name(dtype) << " " << c.str();
  EXPECT_LE(relative_error(got.lse.to_vector(), ref.lse), 1e-6) << dtype_name(dtype) << " " << c.str();
}

const std::vector<AttentionCase>& forward_cases() {
  static const std::vector<AttentionCase> cases = {
      {{1, 7, 33, 13}, 4, 2, 8, 0, true},   // GQA
      {{1, 7, 33, 13}, 4, 2, 8, 0, false},  // GQA, no mask
      {{5, 1, 9}, 3, 1, 6, 0, true},        // MQA
      {{5, 1, 9}, 2, 2, 5, 3, false},       // MHA with prefix
      {{4, 6}, 6, 3, 7, 3, true},           // GQA with prefix, causal
      {{1}, 1, 1, 1, 0, true},              // a single token
  };
  return cases;
}

TEST(AttentionForward, MatchesNaiveReferenceInEveryDtype) {
  for (const AttentionCase& c : forward_cases()) {
    expect_matches_reference(c, DType::kF64, 1e-12);
    expect_matches_reference(c, DType::kF32, 1e-6);
    expect_matches_reference(c, DType::kBF16, 1e-2);
    expect_matches_reference(c, DType::kF16, 1e-3);
  }
}

TEST(AttentionForward, HandComputedValues) {
  // One sequence of two tokens, head_dim 1, scale 1: q = (1, 2), k = (0, 1), v = (10, 20).
  Tensor q = Tensor::from_values({1, 2}, {2, 1, 1}, DType::kF64);
  Tensor k = Tensor::from_values({0, 1}, {2, 1, 1}, DType::kF64);
  Tensor v = Tensor::from_values({10, 20}, {2, 1, 1}, DType::kF64);
  Tensor cu = testing::cu_seqlens_of({2});
  ops::AttentionOutput causal = ops::attention_forward(q, k, v, cu, {1.0, true});
  const double e2 = std::exp(2.0);
  std::vector<double> out = causal.out.to_vector(), lse = causal.lse.to_vector();
  EXPECT_DOUBLE_EQ(out[0], 10.0);  // token 0 sees only itself
  EXPECT_NEAR(out[1], 10.0 + 10.0 * e2 / (1 + e2), 1e-12);
  EXPECT_NEAR(lse[0], 0.0, 1e-12);
  EXPECT_NEAR(lse[1], std::log(1 + e2), 1e-12);
  ops::AttentionOutput full = ops::attention_forward(q, k, v, cu, {1.0, false});
  const double e = std::exp(1.0);  // token 0 now also sees key 1: scores 0 and 1
  EXPECT_NEAR(full.out.to_vector()[0], 10.0 + 10.0 * e / (1 + e), 1e-12);
  EXPECT_NEAR(full.lse.to_vector()[0], std::log(1 + e), 1e-12);
}

TEST(AttentionForward, PlainBatchIsEqualLengthPacking) {
  // Attention of a [B, S] batch with cu_seqlens 0, S, 2S equals attending each sequence alone.
  AttentionCase both{{5, 5}, 4, 2, 8, 2, true};
  AttentionTensors t = testing::random_attention_inputs(both, DType::kF64, 3);
  Tensor out = ops::attention_forward(t.q, t.k, t.v, t.cu_seqlens, both.config(), t.prefix).out;
  for (std::int64_t b = 0; b < 2; ++b) {
    ops::AttentionPrefix prefix{t.prefix.k.narrow(0, b, 1), t.prefix.v.narrow(0, b, 1)};
    Tensor alone = ops::attention_forward(t.q.narrow(0, 5 * b, 5), t.k.narrow(0, 5 * b, 5), t.v.narrow(0, 5 * b, 5),
                                          testing::cu_seqlens_of({5}), both.config(), prefix)
                       .out;
    EXPECT_EQ(alone.to_vector(), out.narrow(0, 5 * b, 5).to_vector()) << "sequence " << b;
  }
}

TEST(AttentionForward, SequencesDoNotLeakIntoEachOther) {
  for (bool causal : {true, false}) {
    AttentionCase c{{3, 4, 2}, 4, 2, 5, 2, causal};
    AttentionTensors t = testing::random_attention_inputs(c, DType::kF64, 11);
    Tensor before = ops::attention_forward(t.q, t.k, t.v, t.cu_seqlens, c.config(), t.prefix).out;
    // Replace sequence 2's (tokens 3..6) keys, values and prefix.
    t.k.narrow(0, 3, 4).copy_from(Tensor::normal({4, 2, 5}, 50, 0, 0.0, 3.0, DType::kF64));
    t.v.narrow(0, 3, 4).copy_from(Tensor::normal({4, 2, 5}, 51, 0, 0.0, 3.0, DType::kF64));
    t.prefix.k.narrow(0, 1, 1).copy_from(Tensor::normal({1, 2, 2, 5}, 52, 0, 0.0, 3.0, DType::kF64));
    Tensor after = ops::attention_forward(t.q, t.k, t.v, t.cu_seqlens, c.config(), t.prefix).out;
    EXPECT_EQ(before.narrow(0, 0, 3).to_vector(), after.narrow(0, 0, 3).to_vector()) << c.str();
    EXPECT_EQ(before.narrow(0, 7, 2).to_vector(), after.narrow(0, 7, 2).to_vector()) << c.str();
    EXPECT_NE(before.narrow(0, 3, 4).to_vector(), after.narrow(0, 3, 4).to_vector()) << c.str();
  }
}

TEST(AttentionForward, AcceptsViewsOfAPackedQkvProjection) {
  AttentionCase c{{3, 5}, 4, 2, 6, 0, true};
  Tensor qkv = Tensor::normal({8, 8, 6}, 5, 0, 0.0, 1.0, DType::kF32);  // heads: 4 q, 2 k, 2 v
  Tensor q = qkv.narrow(1, 0, 4), k = qkv.narrow(1, 4, 2), v = qkv.narrow(1, 6, 2);
  Tensor cu = testing::cu_seqlens_of(c.lengths);
  Tensor from_views = ops::attention_forward(q, k, v, cu, c.config()).out;
  Tensor from_copies = ops::attention_forward(q.contiguous(), k.contiguous(), v.contiguous(), cu, c.config()).out;
  EXPECT_EQ(from_views.to_vector(), from_copies.to_vector());
}

void check_gradients(const AttentionCase& c, double tolerance) {
  AttentionTensors t = testing::random_attention_inputs(c, DType::kF64, 21);
  const bool with_prefix = c.prefix_len > 0;
  auto prefix_of = [&](const std::vector<Tensor>& in) {
    return with_prefix ? ops::AttentionPrefix{in[3], in[4]} : ops::AttentionPrefix{};
  };
  testing::Forward forward = [&](const std::vector<Tensor>& in) {
    return ops::attention_forward(in[0], in[1], in[2], t.cu_seqlens, c.config(), prefix_of(in)).out;
  };
  testing::Backward backward = [&](const std::vector<Tensor>& in, const Tensor& grad_out) {
    ops::AttentionOutput saved = ops::attention_forward(in[0], in[1], in[2], t.cu_seqlens, c.config(), prefix_of(in));
    ops::AttentionGrads g = ops::attention_backward(grad_out, in[0], in[1], in[2], saved.out, saved.lse, t.cu_seqlens,
                                                    c.config(), prefix_of(in));
    std::vector<Tensor> grads{g.grad_q, g.grad_k, g.grad_v};
    if (with_prefix) grads.insert(grads.end(), {g.grad_prefix_k, g.grad_prefix_v});
    return grads;
  };
  std::vector<Tensor> inputs{t.q, t.k, t.v};
  if (with_prefix) inputs.insert(inputs.end(), {t.prefix.k, t.prefix.v});
  SCOPED_TRACE(c.str());
  testing::expect_gradients_match("attention " + c.str(), forward, backward, inputs,
                                  std::vector<bool>(inputs.size(), true), 1e-6, tolerance);
}

TEST(AttentionBackward, GradientsMatchFiniteDifferences) {
  check_gradients({{1, 3, 4}, 4, 2, 5, 2, true}, 1e-6);
  check_gradients({{1, 3, 4}, 4, 2, 5, 2, false}, 1e-6);
  check_gradients({{2, 5}, 3, 1, 3, 0, true}, 1e-6);     // MQA without prefix
  check_gradients({{3, 0, 2}, 2, 2, 4, 1, true}, 1e-6);  // an empty sequence between two
}

TEST(AttentionBackward, EmptySequenceGetsZeroPrefixGradient) {
  AttentionCase c{{2, 0, 3}, 2, 1, 4, 2, true};
  AttentionTensors t = testing::random_attention_inputs(c, DType::kF64, 31);
  ops::AttentionOutput saved = ops::attention_forward(t.q, t.k, t.v, t.cu_seqlens, c.config(), t.prefix);
  Tensor grad_out = Tensor::normal(t.q.shape(), 32, 0, 0.0, 1.0, DType::kF64);
  ops::AttentionGrads g =
      ops::attention_backward(grad_out, t.q, t.k, t.v, saved.out, saved.lse, t.cu_seqlens, c.config(), t.prefix);
  for (double x : g.grad_prefix_k.select(0, 1).to_vector()) EXPECT_EQ(x, 0.0);
  for (double x : g.grad_prefix_v.select(0, 1).to_vector()) EXPECT_EQ(x, 0.0);
}

void expect_error(const std::function<void()>& call, const std::vector<std::string>& fragments) {
  try {
    call();
    ADD_FAILURE() << "no error; expected one mentioning " << fragments.front();
  } catch (const Error& e) {
    for (const std::string& f : fragments) EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
  }
}

TEST(AttentionErrors, NameBothValues) {
  const ops::AttentionConfig config{0.5, true};
  Tensor q = Tensor::zeros({6, 4, 8}, DType::kF32), k = Tensor::zeros({6, 2, 8}, DType::kF32);
  Tensor cu = testing::cu_seqlens_of({2, 4});
  expect_error(
      [&] {
        ops::attention_forward(Tensor::zeros({6, 3, 8}, DType::kF32), k, k, cu, config);
      },
      {"3 heads", "2 kv heads", "[6, 3, 8]", "[6, 2, 8]"});
  expect_error(
      [&] {
        ops::attention_forward(q, k, k, testing::cu_seqlens_of({2, 3}), config);
      },
      {"ends at 5", "6 tokens"});
  expect_error(
      [&] {
        ops::attention_forward(q, k, k, Tensor::from_values({0, 4, 2, 6}, {4}, DType::kI32), config);
      },
      {"decreases from 4 to 2"});
  expect_error(
      [&] {
        ops::attention_forward(q, k, k, Tensor::from_values({1, 6}, {2}, DType::kI32), config);
      },
      {"starts at 1"});
  expect_error(
      [&] {
        ops::attention_forward(q, k, k, Tensor::from_values({0, 6}, {2}, DType::kI64), config);
      },
      {"cu_seqlens", "int32", "int64"});
  expect_error([&] { ops::attention_forward(q.to(DType::kBF16), k, k, cu, config); }, {"bfloat16", "float32"});
  expect_error(
      [&] {
        ops::attention_forward(q, Tensor::zeros({6, 2, 6}, DType::kF32), Tensor::zeros({6, 2, 6}, DType::kF32), cu,
                               config);
      },
      {"[6, 2, 6]", "[6, 4, 8]", "head_dim"});
  expect_error(
      [&] {
        ops::attention_forward(q, k, Tensor::zeros({6, 2, 7}, DType::kF32), cu, config);
      },
      {"[6, 2, 8]", "[6, 2, 7]"});
  expect_error(
      [&] {
        ops::attention_forward(q, Tensor::zeros({5, 2, 8}, DType::kF32), Tensor::zeros({5, 2, 8}, DType::kF32), cu,
                               config);
      },
      {"[5, 2, 8]", "[6, 4, 8]", "total_tokens"});
  expect_error([&] { ops::attention_forward(q.to(DType::kI32), k.to(DType::kI32), k.to(DType::kI32), cu, config); },
               {"floating", "int32"});
}

TEST(AttentionErrors, PrefixAndSavedTensors) {
  const ops::AttentionConfig config{0.5, true};
  Tensor q = Tensor::zeros({6, 4, 8}, DType::kF32), k = Tensor::zeros({6, 2, 8}, DType::kF32);
  Tensor cu = testing::cu_seqlens_of({2, 4});
  Tensor prefix = Tensor::zeros({2, 3, 2, 8}, DType::kF32);
  expect_error([&] { ops::attention_forward(q, k, k, cu, config, {prefix, Tensor()}); }, {"prefix_v", "both"});
  Tensor three = Tensor::zeros({3, 3, 2, 8}, DType::kF32);
  expect_error([&] { ops::attention_forward(q, k, k, cu, config, {three, three}); }, {"[3, 3, 2, 8]", "batch"});
  Tensor wide = Tensor::zeros({2, 3, 1, 8}, DType::kF32);
  expect_error([&] { ops::attention_forward(q, k, k, cu, config, {wide, wide}); }, {"[2, 3, 1, 8]", "[6, 2, 8]"});
  ops::AttentionOutput saved = ops::attention_forward(q, k, k, cu, config);
  expect_error(
      [&] {
        ops::attention_backward(q, q, k, k, saved.out, Tensor::zeros({6, 3}, DType::kF32), cu, config);
      },
      {"lse", "[6, 3]", "[6, 4, 8]"});
  expect_error([&] { ops::attention_backward(q, q, k, k, saved.out, saved.lse.to(DType::kF64), cu, config); },
               {"lse", "float64", "float32"});
  expect_error(
      [&] {
        ops::attention_backward(Tensor::zeros({6, 4, 7}, DType::kF32), q, k, k, saved.out, saved.lse, cu, config);
      },
      {"grad_out", "[6, 4, 7]", "[6, 4, 8]"});
}

}  // namespace
}  // namespace zt
