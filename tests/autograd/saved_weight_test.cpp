// A frozen weight that a WeightSource produces is kept by reference while a RereadWeights scope
// names the source (autograd/saved_weight.h): the tape holds no copy of its value, the weight's
// value may be dropped after the forward (as the 4-bit base releases a layer), and backward asks
// the source for it once, giving the gradients of the plain tape exactly.
#include <gtest/gtest.h>

#include <unordered_map>

#include "autograd/functions.h"
#include "autograd/saved_weight.h"
#include "tests/common/op_test_util.h"

namespace zt::autograd {
namespace {

using testing::random_tensor;

// Produces the weights it was given, counting the requests.
class CountingSource : public WeightSource {
 public:
  void add(const Variable& weight) { values_.emplace(weight.impl().get(), weight.data()); }
  bool produces(const Variable& weight) const override { return values_.contains(weight.impl().get()); }
  Tensor produce(const Variable& weight) const override {
    ++produced;
    return values_.at(weight.impl().get());
  }
  mutable int produced = 0;

 private:
  std::unordered_map<const VariableImpl*, Tensor> values_;
};

void drop_value(const Variable& weight) { weight.impl()->data = Tensor::empty({0}, weight.data().dtype()); }

void expect_equal(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_TRUE(a.defined() && b.defined()) << what;
  EXPECT_EQ(a.to_vector(), b.to_vector()) << what;
}

TEST(SavedWeight, ALinearKeepsAProducedWeightByReference) {
  const Tensor x_value = random_tensor({3, 5}, 1), w_value = random_tensor({4, 5}, 2);
  const Tensor probe = random_tensor({3, 4}, 3);
  Variable plain_x(x_value, true, "x");
  linear(plain_x, Variable(w_value, false, "w")).backward(probe);

  CountingSource source;
  Variable x(x_value, true, "x"), w(w_value.clone(), false, "w");
  source.add(w);
  const long before = w.data().storage().use_count();
  Variable y;
  {
    RereadWeights scope(&source);
    y = linear(x, w);
  }
  EXPECT_EQ(w.data().storage().use_count(), before) << "the tape holds no reference to the value";
  drop_value(w);  // what a gatherer's release does
  EXPECT_EQ(source.produced, 0);
  y.backward(probe);
  EXPECT_EQ(source.produced, 1);
  expect_equal(x.grad(), plain_x.grad(), "input gradient");
}

// Projections with a LoRA update: the produced weight is asked for once, a frozen weight the
// source does not produce is kept, and every gradient equals the plain tape's.
TEST(SavedWeight, ProjectionsAskForEachProducedWeightOnce) {
  const Tensor x_value = random_tensor({2, 3, 5}, 4), w1 = random_tensor({4, 5}, 5), w2 = random_tensor({3, 5}, 6);
  const Tensor a_value = random_tensor({2, 5}, 7), b_value = random_tensor({4, 2}, 8);
  const std::vector<Tensor> probes{random_tensor({2, 3, 4}, 9), random_tensor({2, 3, 3}, 10)};
  struct Run {
    Variable x, a, b;
  };
  auto run = [&](const WeightSource* source, CountingSource* registry, bool drop) {
    Run r{Variable(x_value, true, "x"), Variable(a_value, true, "a"), Variable(b_value, true, "b")};
    Variable first(w1.clone(), false, "w1"), second(w2, false, "w2");
    if (registry != nullptr) registry->add(first);
    std::vector<Variable> out;
    {
      RereadWeights scope(source);
      out = projections(r.x, {{.weight = first, .lora_a = r.a, .lora_b = r.b, .lora_scale = 2.0}, {.weight = second}});
    }
    if (drop) drop_value(first);
    add(sum(mul(out[0], Variable(probes[0]))), sum(mul(out[1], Variable(probes[1])))).backward();
    return r;
  };
  const Run plain = run(nullptr, nullptr, false);
  CountingSource source;
  const Run reread = run(&source, &source, true);
  EXPECT_EQ(source.produced, 1);
  expect_equal(reread.x.grad(), plain.x.grad(), "input gradient");
  expect_equal(reread.a.grad(), plain.a.grad(), "lora_A gradient");
  expect_equal(reread.b.grad(), plain.b.grad(), "lora_B gradient");
}

// Only a frozen weight is produced again, and only when the input's gradient needs it; the scope
// ends where it is closed.
TEST(SavedWeight, TrainedWeightsInputsWithoutGradientAndClosedScopesKeepTheirWay) {
  CountingSource source;
  Variable trained(random_tensor({4, 5}, 11), true, "trained");
  source.add(trained);
  Variable x(random_tensor({3, 5}, 12), true, "x");
  {
    RereadWeights scope(&source);
    sum(linear(x, trained)).backward();
  }
  EXPECT_EQ(source.produced, 0) << "a trained weight is kept";
  EXPECT_TRUE(trained.grad().defined());

  Variable frozen(random_tensor({4, 5}, 13), false, "frozen");
  source.add(frozen);
  Variable constant(random_tensor({3, 5}, 14), false, "constant");
  Variable lora_a(random_tensor({2, 5}, 15), true, "a"), lora_b(random_tensor({4, 2}, 16), true, "b");
  {
    RereadWeights scope(&source);
    sum(lora_linear(constant, frozen, Variable(), lora_a, lora_b, 1.0)).backward();
  }
  EXPECT_EQ(source.produced, 0) << "an input without gradient needs no weight";

  {
    RereadWeights outer(&source);
    { RereadWeights inner(nullptr); }
    const long before = frozen.data().storage().use_count();
    Variable y = linear(x, frozen);
    EXPECT_EQ(frozen.data().storage().use_count(), before) << "the outer scope is back after the inner one";
  }
  const long before = frozen.data().storage().use_count();
  Variable kept = linear(x, frozen);
  EXPECT_EQ(frozen.data().storage().use_count(), before + 1) << "outside any scope the tape keeps the weight";
}

}  // namespace
}  // namespace zt::autograd
