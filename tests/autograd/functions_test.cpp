// Every differentiable op, checked through the tape: gradients that autograd delivers to
// the leaves equal central finite differences in float64, and the tape keeps and frees
// only what it should.
#include <gtest/gtest.h>

#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "autograd/node.h"
#include "ops/elementwise/elementwise.h"
#include "runtime/error.h"
#include "runtime/generator.h"
#include "tests/common/gradcheck.h"
#include "tests/common/op_test_util.h"

namespace zt::autograd {
namespace {

using testing::error_of;
using testing::expect_mentions;
using testing::random_tensor;
using VariableFn = std::function<Variable(const std::vector<Variable>&)>;

// Runs `fn` as the forward (without recording) and as autograd's backward: each
// differentiable input becomes a leaf, and its .grad after backward(probe) is the analytic
// gradient the finite differences are compared with.
void expect_tape_gradients(const std::string& what, const VariableFn& fn, std::vector<Tensor> inputs,
                           std::vector<bool> differentiable) {
  auto forward = [&](const std::vector<Tensor>& values) {
    NoGradGuard plain;
    std::vector<Variable> vars(values.begin(), values.end());
    return fn(vars).data();
  };
  auto backward = [&](const std::vector<Tensor>& values, const Tensor& probe) {
    std::vector<Variable> vars;
    for (std::size_t k = 0; k < values.size(); ++k)
      vars.emplace_back(values[k], differentiable[k], "in" + std::to_string(k));
    fn(vars).backward(probe);
    std::vector<Tensor> grads;
    for (const Variable& v : vars) grads.push_back(v.grad());
    return grads;
  };
  testing::expect_gradients_match(what, forward, backward, std::move(inputs), differentiable);
}

Tensor ids(std::vector<double> values, DType dtype = DType::kI64) {
  return Tensor::from_values(values, {static_cast<std::int64_t>(values.size())}, dtype);
}

TEST(AutogradFunctions, Elementwise) {
  Tensor a = random_tensor({3, 5}, 1), b = random_tensor({5}, 2), c = random_tensor({3, 5}, 3);
  expect_tape_gradients("add", [](auto& in) { return add(in[0], in[1]); }, {a, b}, {true, true});
  expect_tape_gradients("sub", [](auto& in) { return sub(in[0], in[1]); }, {a, b}, {true, true});
  expect_tape_gradients("mul", [](auto& in) { return mul(in[0], in[1]); }, {a, b}, {true, true});
  expect_tape_gradients("mul, one side", [](auto& in) { return mul(in[0], in[1]); }, {a, c}, {false, true});
  expect_tape_gradients("scale", [](auto& in) { return scale(in[0], -1.75); }, {a}, {true});
  expect_tape_gradients("residual_add", [](auto& in) { return residual_add(in[0], in[1]); }, {a, c}, {true, true});
}

TEST(AutogradFunctions, DropoutRepeatsItsMaskInBackward) {
  auto fn = [](const std::vector<Variable>& in) {
    default_generator().set_state({11, 4});
    return dropout(in[0], 0.4);
  };
  expect_tape_gradients("dropout", fn, {random_tensor({7, 3}, 4)}, {true});
  Variable x(random_tensor({4}, 5), true, "x");
  EXPECT_EQ(dropout(x, 0.5, /*training=*/false).impl(), x.impl());
}

TEST(AutogradFunctions, CastReturnsGradientsInTheInputDtype) {
  Variable x(random_tensor({2, 3}, 6, DType::kF32), true, "x");
  Variable y = cast(x, DType::kBF16);
  EXPECT_EQ(y.data().dtype(), DType::kBF16);
  sum(cast(y, DType::kF32)).backward();
  EXPECT_EQ(x.grad().dtype(), DType::kF32);
  EXPECT_EQ(x.grad().to_vector(), std::vector<double>(6, 1.0));
  EXPECT_EQ(cast(x, DType::kF32).impl(), x.impl());
}

TEST(AutogradFunctions, ReductionsAndShapes) {
  Tensor x = random_tensor({3, 4, 5}, 7);
  expect_tape_gradients("sum", [](auto& in) { return sum(in[0]); }, {x}, {true});
  expect_tape_gradients("mean", [](auto& in) { return mean(in[0]); }, {x}, {true});
  expect_tape_gradients("sum dim", [](auto& in) { return sum(in[0], 1); }, {x}, {true});
  expect_tape_gradients("mean dim keepdim", [](auto& in) { return mean(in[0], -1, true); }, {x}, {true});
  expect_tape_gradients("reshape", [](auto& in) { return reshape(in[0], {12, 5}); }, {x}, {true});
  expect_tape_gradients("narrow", [](auto& in) { return narrow(in[0], 2, 1, 3); }, {x}, {true});
}

TEST(AutogradFunctions, LinearMatmulEmbedding) {
  Tensor x = random_tensor({2, 3, 5}, 8), w = random_tensor({4, 5}, 9), b = random_tensor({4}, 10);
  expect_tape_gradients("linear", [](auto& in) { return linear(in[0], in[1], in[2]); }, {x, w, b}, {true, true, true});
  expect_tape_gradients("linear, no bias", [](auto& in) { return linear(in[0], in[1]); }, {x, w}, {true, true});
  expect_tape_gradients("linear, frozen weight", [](auto& in) { return linear(in[0], in[1], in[2]); }, {x, w, b},
                        {true, false, false});
  expect_tape_gradients("linear, input needs none", [](auto& in) { return linear(in[0], in[1]); }, {x, w},
                        {false, true});
  Tensor a = random_tensor({2, 5, 3}, 11), m = random_tensor({4, 5}, 12);
  expect_tape_gradients("matmul aᵀ bᵀ", [](auto& in) { return matmul(in[0], in[1], true, true); }, {a, m},
                        {true, true});
  Tensor table = random_tensor({6, 3}, 13), tokens = ids({5, 0, 5, 2});
  expect_tape_gradients("embedding", [&](auto& in) { return embedding(in[0], tokens); }, {table}, {true});
}

// Projections of one input as one op: finite differences through every output, with a bias,
// a LoRA update (its weight frozen) and a plain layer; then the input needing no gradient.
TEST(AutogradFunctions, ProjectionsOfOneInput) {
  Tensor x = random_tensor({2, 3, 5}, 20), w1 = random_tensor({4, 5}, 21), b1 = random_tensor({4}, 22);
  Tensor w2 = random_tensor({3, 5}, 23), a2 = random_tensor({2, 5}, 24), b2 = random_tensor({3, 2}, 25);
  Tensor w3 = random_tensor({2, 5}, 26);
  const std::vector<Tensor> weights_of_outputs{random_tensor({2, 3, 4}, 27), random_tensor({2, 3, 3}, 28),
                                               random_tensor({2, 3, 2}, 29)};
  auto fn = [&](const std::vector<Variable>& in) {
    std::vector<Variable> out =
        projections(in[0], {{.weight = in[1], .bias = in[2]},
                            {.weight = in[3], .bias = Variable(), .lora_a = in[4], .lora_b = in[5], .lora_scale = 1.5},
                            {.weight = in[6]}});
    Variable total = sum(mul(out[0], Variable(weights_of_outputs[0])));
    for (std::size_t i = 1; i < out.size(); ++i) total = add(total, sum(mul(out[i], Variable(weights_of_outputs[i]))));
    return total;
  };
  expect_tape_gradients("projections", fn, {x, w1, b1, w2, a2, b2, w3}, {true, true, true, false, true, true, true});
  expect_tape_gradients("projections, input needs none", fn, {x, w1, b1, w2, a2, b2, w3},
                        {false, true, false, false, true, true, false});
}

// Projections whose updates share a scale run them stacked (ops::LoraStack): the same finite
// differences, with frozen weights as LoRA trains them and a bias on one layer.
TEST(AutogradFunctions, ProjectionsWithStackedUpdates) {
  Tensor x = random_tensor({2, 3, 5}, 30), w1 = random_tensor({4, 5}, 31), b1 = random_tensor({4}, 32);
  Tensor a1 = random_tensor({2, 5}, 33), u1 = random_tensor({4, 2}, 34);
  Tensor w2 = random_tensor({3, 5}, 35), a2 = random_tensor({1, 5}, 36), u2 = random_tensor({3, 1}, 37);
  const std::vector<Tensor> weights_of_outputs{random_tensor({2, 3, 4}, 38), random_tensor({2, 3, 3}, 39)};
  auto fn = [&](const std::vector<Variable>& in) {
    std::vector<Variable> out = projections(
        in[0], {{.weight = in[1], .bias = in[2], .lora_a = in[3], .lora_b = in[4], .lora_scale = 2.0},
                {.weight = in[5], .bias = Variable(), .lora_a = in[6], .lora_b = in[7], .lora_scale = 2.0}});
    return add(sum(mul(out[0], Variable(weights_of_outputs[0]))), sum(mul(out[1], Variable(weights_of_outputs[1]))));
  };
  expect_tape_gradients("stacked updates", fn, {x, w1, b1, a1, u1, w2, a2, u2},
                        {true, false, true, true, true, false, true, true});
  expect_tape_gradients("stacked updates, input needs none", fn, {x, w1, b1, a1, u1, w2, a2, u2},
                        {false, false, false, true, true, false, true, true});
}

// A weight with a gradient sink: linear adds the weight's gradient into it (across backward
// calls, as an optimizer's buffer accumulates micro-batches) and delivers none; the input's
// gradient is delivered as ever; the sink is refused unless float32 of the leaf's shape.
TEST(AutogradFunctions, LinearAddsAWeightGradientIntoItsSink) {
  Variable x2(Tensor::from_values({1, 2, 3, 4}, {2, 2}, DType::kF32), true, "x");
  Variable w2(Tensor::from_values({1, 0, 0, 1, 1, 1}, {3, 2}, DType::kF32), true, "w");
  Tensor sink = Tensor::full({3, 2}, 0.5, DType::kF32);
  w2.set_grad_sink(sink);
  int hook_calls = 0;
  w2.add_grad_ready_hook([&](const Tensor&) { ++hook_calls; });
  sum(linear(x2, w2)).backward();  // d/dW = column sums of x: [4, 6] on every row
  EXPECT_EQ(sink.to_vector(), (std::vector<double>{4.5, 6.5, 4.5, 6.5, 4.5, 6.5}));
  EXPECT_FALSE(w2.grad().defined());
  EXPECT_EQ(hook_calls, 0);
  EXPECT_EQ(x2.grad().to_vector(), (std::vector<double>{2, 2, 2, 2}));
  sum(linear(x2, w2)).backward();
  EXPECT_EQ(sink.to_vector(), (std::vector<double>{8.5, 12.5, 8.5, 12.5, 8.5, 12.5}));
  w2.set_grad_sink(Tensor());
  sum(linear(x2, w2)).backward();
  EXPECT_EQ(w2.grad().to_vector(), (std::vector<double>{4, 6, 4, 6, 4, 6}));
  EXPECT_THROW(w2.set_grad_sink(Tensor::zeros({2, 3}, DType::kF32)), Error);
  EXPECT_THROW(w2.set_grad_sink(Tensor::zeros({3, 2}, DType::kF64)), Error);
}

// Two weights stored one after another (a layer's gate and up) multiplied as one: the product
// and every gradient are the separate linears' (summed over both for the input); with sinks
// one after another the weight gradients go into them and none is delivered, with sinks apart
// each weight receives its rows of the joined gradient; weights stored apart are refused.
TEST(AutogradFunctions, JoinedLinearIsTheSeparateLinears) {
  const Tensor storage = random_tensor({5 * 4}, 31);
  Variable gate(storage.narrow(0, 0, 8).view({2, 4}), true, "gate");
  Variable up(storage.narrow(0, 8, 12).view({3, 4}), true, "up");
  Variable x(random_tensor({6, 4}, 32), true, "x");
  const Tensor weights_of_outputs = random_tensor({6, 5}, 33);
  sum(mul(joined_linear(x, {gate, up}), Variable(weights_of_outputs))).backward();
  const Tensor grad_x = x.grad(), grad_gate = gate.grad(), grad_up = up.grad();
  for (const Variable& v : {x, gate, up}) v.zero_grad();
  Variable gate_apart(gate.data().clone(), true, "gate"), up_apart(up.data().clone(), true, "up");
  const Tensor joined_value = joined_linear(x, {gate, up}).data();
  const Variable gate_y = linear(x, gate_apart), up_y = linear(x, up_apart);
  EXPECT_EQ(max_abs_diff(joined_value.narrow(1, 0, 2).contiguous(), gate_y.data()), 0.0);
  EXPECT_EQ(max_abs_diff(joined_value.narrow(1, 2, 3).contiguous(), up_y.data()), 0.0);
  add(sum(mul(gate_y, Variable(weights_of_outputs.narrow(1, 0, 2).contiguous()))),
      sum(mul(up_y, Variable(weights_of_outputs.narrow(1, 2, 3).contiguous()))))
      .backward();
  EXPECT_LE(max_abs_diff(grad_x, x.grad()), 1e-12);
  EXPECT_EQ(max_abs_diff(grad_gate, gate_apart.grad()), 0.0);
  EXPECT_EQ(max_abs_diff(grad_up, up_apart.grad()), 0.0);

  Tensor sinks = Tensor::zeros({5 * 4 + 4}, DType::kF32);
  for (std::int64_t gap : {0, 4}) {  // one after another, then 4 values apart
    gate.set_grad_sink(sinks.narrow(0, 0, 8).view({2, 4}));
    up.set_grad_sink(sinks.narrow(0, 8 + gap, 12).view({3, 4}));
    sinks.zero_();
    for (const Variable& v : {x, gate, up}) v.zero_grad();
    sum(mul(joined_linear(x, {gate, up}), Variable(weights_of_outputs))).backward();
    if (gap == 0) {
      EXPECT_FALSE(gate.grad().defined());
      EXPECT_FALSE(up.grad().defined());
      EXPECT_LE(max_abs_diff(gate.grad_sink(), grad_gate.to(DType::kF32)), 1e-6);
      EXPECT_LE(max_abs_diff(up.grad_sink(), grad_up.to(DType::kF32)), 1e-6);
    } else {
      EXPECT_EQ(max_abs_diff(gate.grad(), grad_gate), 0.0);
      EXPECT_EQ(max_abs_diff(up.grad(), grad_up), 0.0);
    }
  }
  gate.set_grad_sink(Tensor());
  up.set_grad_sink(Tensor());
  expect_mentions(error_of([&] { joined_linear(x, {gate_apart, up_apart}); }), {"not stored one after another"});
}

// The SwiGLU and the down projection as one op that keeps gate_up only: the value and every
// gradient bit for bit the two ops', a trained weight's gradient into its sink, and gradients
// that match finite differences whichever inputs are trained.
TEST(AutogradFunctions, SwigluLinearIsTheSwigluThenTheLinear) {
  for (bool with_bias : {true, false}) {
    SCOPED_TRACE(with_bias ? "with bias" : "without bias");
    auto leaves = [&] {
      return std::vector<Variable>{
          Variable(random_tensor({6, 8}, 40, DType::kF32), true, "gate_up"),
          Variable(random_tensor({3, 4}, 41, DType::kF32), true, "down"),
          with_bias ? Variable(random_tensor({3}, 42, DType::kF32), true, "bias") : Variable()};
    };
    const Tensor probe = random_tensor({6, 3}, 43, DType::kF32);
    std::vector<Variable> fused = leaves(), apart = leaves();
    const Variable y_fused = swiglu_linear(fused[0], fused[1], fused[2]);
    const Variable y_apart = linear(swiglu_fused(apart[0]), apart[1], apart[2]);
    EXPECT_EQ(y_fused.data().to_vector(), y_apart.data().to_vector());
    y_fused.backward(probe);
    y_apart.backward(probe);
    for (std::size_t i = 0; i < (with_bias ? 3u : 2u); ++i)
      EXPECT_EQ(fused[i].grad().to_vector(), apart[i].grad().to_vector()) << apart[i].name();

    std::vector<Variable> sunk = leaves();
    Tensor sink = Tensor::full({3, 4}, 0.25, DType::kF32);
    sunk[1].set_grad_sink(sink);
    swiglu_linear(sunk[0], sunk[1], sunk[2]).backward(probe);
    EXPECT_FALSE(sunk[1].grad().defined());
    EXPECT_LE(max_abs_diff(sink, ops::add_forward(apart[1].grad(), Tensor::full({3, 4}, 0.25, DType::kF32))), 1e-6);
    EXPECT_EQ(sunk[0].grad().to_vector(), apart[0].grad().to_vector());
    sunk[1].set_grad_sink(Tensor());
  }
  const Tensor gate_up = random_tensor({5, 6}, 44), weight = random_tensor({2, 3}, 45), bias = random_tensor({2}, 46);
  auto op = [](auto& in) { return swiglu_linear(in[0], in[1], in[2]); };
  for (std::vector<bool> trained :
       {std::vector<bool>{true, true, true}, {true, false, false}, {false, true, true}, {false, false, true}})
    expect_tape_gradients("swiglu_linear", op, {gate_up, weight, bias}, trained);
}

TEST(AutogradFunctions, TransformerPieces) {
  Tensor x = random_tensor({5, 7}, 14), w = random_tensor({7}, 15, DType::kF64, 1.0);
  for (auto style : {ops::RmsNormStyle::kQwen, ops::RmsNormStyle::kGlm})
    expect_tape_gradients("rmsnorm", [style](auto& in) { return rmsnorm(in[0], in[1], 1e-6f, style); }, {x, w},
                          {true, true});
  Tensor heads = random_tensor({4, 3, 8}, 16), positions = ids({0, 1, 2, 0});
  ops::RopeConfig qwen{ops::RopeStyle::kRotateHalf, 10000.0, 1.0}, glm{ops::RopeStyle::kInterleaved, 10000.0, 0.5};
  for (const ops::RopeConfig& config : {qwen, glm})
    expect_tape_gradients("rope", [&](auto& in) { return rope(in[0], positions, config); }, {heads}, {true});
  Tensor gate = random_tensor({3, 5}, 17), up = random_tensor({3, 5}, 18);
  expect_tape_gradients("swiglu", [](auto& in) { return swiglu(in[0], in[1]); }, {gate, up}, {true, true});
  expect_tape_gradients("swiglu fused", [](auto& in) { return swiglu_fused(in[0]); }, {random_tensor({3, 10}, 19)},
                        {true});
}

TEST(AutogradFunctions, AttentionWithGroupedHeadsPackedSequencesAndPrefix) {
  Tensor q = random_tensor({5, 4, 3}, 20), k = random_tensor({5, 2, 3}, 21), v = random_tensor({5, 2, 3}, 22);
  Tensor cu_seqlens = ids({0, 3, 5}, DType::kI32);
  Tensor prefix_k = random_tensor({2, 2, 2, 3}, 23), prefix_v = random_tensor({2, 2, 2, 3}, 24);
  ops::AttentionConfig config{0.6, true};
  expect_tape_gradients("attention", [&](auto& in) { return attention(in[0], in[1], in[2], cu_seqlens, config); },
                        {q, k, v}, {true, true, true});
  expect_tape_gradients("attention with prefix",
                        [&](auto& in) { return attention(in[0], in[1], in[2], cu_seqlens, config, in[3], in[4]); },
                        {q, k, v, prefix_k, prefix_v}, {false, false, false, true, true});
  Variable only_keys(prefix_k, true, "prefix_k");
  expect_mentions(error_of([&] { attention(Variable(q), Variable(k), Variable(v), cu_seqlens, config, only_keys); }),
                  {"attention", "prefix"});
}

TEST(AutogradFunctions, SoftmaxAndCrossEntropy) {
  Tensor logits = random_tensor({4, 9}, 25);
  expect_tape_gradients("softmax", [](auto& in) { return softmax(in[0]); }, {logits}, {true});
  Tensor labels = ids({3, -100, 8, 0});
  expect_tape_gradients("cross_entropy", [&](auto& in) { return cross_entropy(in[0], labels); }, {logits}, {true});
  ops::CrossEntropyOptions summed{ops::Reduction::kSum, -100};
  expect_tape_gradients("cross_entropy sum", [&](auto& in) { return cross_entropy(in[0], labels, summed); }, {logits},
                        {true});
}

TEST(AutogradFunctions, AFrozenWeightLinearKeepsNoActivation) {
  Variable x(random_tensor({3, 5}, 26), true, "x");
  Variable w(random_tensor({4, 5}, 27), false, "frozen_weight");
  long before = x.data().storage().use_count();
  Variable y = linear(x, w);
  EXPECT_EQ(x.data().storage().use_count(), before) << "grad_x needs only the weight";
  Variable z = linear(y, Variable(random_tensor({2, 4}, 28), true, "trained"));
  EXPECT_GT(y.data().storage().use_count(), 1) << "grad_weight needs the input";
  sum(z).backward();
  EXPECT_EQ(y.data().storage().use_count(), 1) << "released after its backward step";
  EXPECT_FALSE(w.grad().defined());
}

TEST(AutogradFunctions, BadUseNamesTheOpAndBothValues) {
  Variable a(random_tensor({3, 4}, 29), true, "a"), b(random_tensor({5}, 30), true, "b");
  expect_mentions(error_of([&] { add(a, b); }), {"add", "[3, 4]", "[5]"});
  Variable w32(random_tensor({2, 4}, 31, DType::kF32), true, "w");
  expect_mentions(error_of([&] { linear(a, w32); }), {"linear", "float64", "float32"});
  expect_mentions(error_of([&] {
                    matmul(a, Variable(random_tensor({3, 2}, 32), true));
                  }),
                  {"matmul", "[3, 4]", "[3, 2]"});
  Variable y = linear(a, Variable(random_tensor({2, 4}, 33), true, "w"));
  expect_mentions(error_of([&] { y.backward(); }), {"scalar", "[3, 2]"});
}

}  // namespace
}  // namespace zt::autograd
