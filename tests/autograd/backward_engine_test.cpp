// The tape and engine, on small ops defined here so the engine is tested on its own.
#include <gtest/gtest.h>

#include "autograd/checkpoint.h"
#include "autograd/grad_mode.h"
#include "autograd/node.h"
#include "runtime/error.h"
#include "runtime/generator.h"

namespace zt::autograd {
namespace {

using Values = std::vector<double>;

Tensor map_values(const Tensor& t, const std::function<double(double, std::size_t)>& f) {
  Values v = t.to_vector();
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = f(v[i], i);
  return Tensor::from_values(v, t.shape(), t.dtype());
}

Tensor multiply(const Tensor& a, const Tensor& b) {
  Values y = b.to_vector();
  return map_values(a, [&](double x, std::size_t i) { return x * y[i]; });
}

Variable scale(const Variable& x, double c) {
  return record_one("scale", map_values(x.data(), [c](double v, std::size_t) { return v * c; }), {x},
                    [c](const std::vector<Tensor>& g, const std::vector<bool>&) {
                      return std::vector<Tensor>{map_values(g[0], [c](double v, std::size_t) { return v * c; })};
                    });
}

Variable mul(const Variable& a, const Variable& b) {
  Tensor av = a.data(), bv = b.data();
  return record_one(
      "mul", multiply(av, bv), {a, b}, [av, bv](const std::vector<Tensor>& g, const std::vector<bool>& needs) {
        return std::vector<Tensor>{needs[0] ? multiply(g[0], bv) : Tensor(), needs[1] ? multiply(g[0], av) : Tensor()};
      });
}

Variable sum(const Variable& x) {
  double total = 0;
  for (double v : x.data().to_vector()) total += v;
  Shape shape = x.data().shape();
  return record_one("sum", Tensor::from_values({total}, {}, x.data().dtype()), {x},
                    [shape](const std::vector<Tensor>& g, const std::vector<bool>&) {
                      return std::vector<Tensor>{Tensor::full(shape, g[0].item(), g[0].dtype())};
                    });
}

// Adds noise drawn from the thread's generator: what dropout does to the random stream.
Variable add_noise(const Variable& x) {
  GeneratorState draw = default_generator().reserve(static_cast<std::uint64_t>(x.data().numel()));
  Tensor noise = Tensor::uniform(x.data().shape(), draw.seed, draw.offset, 0, 1, x.data().dtype());
  Values n = noise.to_vector();
  return record_one("add_noise", map_values(x.data(), [&](double v, std::size_t i) { return v + n[i]; }), {x},
                    [](const std::vector<Tensor>& g, const std::vector<bool>&) { return std::vector<Tensor>{g[0]}; });
}

Variable leaf(Values values, const std::string& name) {
  Shape shape{static_cast<std::int64_t>(values.size())};
  return Variable(Tensor::from_values(values, shape, DType::kF64), true, name);
}

TEST(Autograd, ChainRuleAndAccumulationAcrossCalls) {
  Variable x = leaf({1, 2, 3}, "x");
  Variable w = leaf({4, 5, 6}, "w");
  Variable loss = sum(scale(mul(x, w), 2.0));
  loss.backward();
  EXPECT_EQ(x.grad().to_vector(), (Values{8, 10, 12}));
  EXPECT_EQ(w.grad().to_vector(), (Values{2, 4, 6}));
  sum(mul(x, w)).backward();  // accumulates
  EXPECT_EQ(x.grad().to_vector(), (Values{12, 15, 18}));
  x.zero_grad();
  EXPECT_FALSE(x.grad().defined());
}

TEST(Autograd, ALeafUsedTwiceGetsBothContributionsAndOneHookCall) {
  Variable x = leaf({1, 2}, "x");
  int calls = 0;
  Values seen;
  x.add_grad_ready_hook([&](const Tensor& g) {
    ++calls;
    seen = g.to_vector();
  });
  sum(mul(x, x)).backward();  // d(x²)/dx = 2x, delivered along two edges
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen, (Values{2, 4}));
  sum(scale(x, 3)).backward();
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(seen, (Values{5, 7}));  // the hook sees the accumulated gradient
}

TEST(Autograd, SavedTensorsAreReleasedAfterTheirBackwardStep) {
  Variable x = leaf({1, 2}, "x");
  auto token = std::make_shared<int>(0);
  std::weak_ptr<int> watch = token;
  Variable y = record_one("holder", x.data(), {x}, [token](const std::vector<Tensor>& g, const std::vector<bool>&) {
    return std::vector<Tensor>{g[0]};
  });
  token.reset();
  EXPECT_FALSE(watch.expired());
  sum(y).backward();
  EXPECT_TRUE(watch.expired());
  try {
    sum(y).backward();
    FAIL() << "a second backward through released nodes must fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("second time"), std::string::npos) << e.what();
  }
}

TEST(Autograd, NoGradScopeRecordsNothing) {
  Variable x = leaf({1, 2}, "x");
  {
    NoGradGuard guard;
    Variable y = scale(x, 2);
    EXPECT_FALSE(y.requires_grad());
    EXPECT_THROW(y.backward(Tensor::ones({2}, DType::kF64)), Error);
  }
  EXPECT_TRUE(grad_enabled());
  EXPECT_TRUE(scale(x, 2).requires_grad());
  EXPECT_FALSE(scale(x.detach(), 2).requires_grad());
}

TEST(Autograd, NonScalarBackwardNeedsAGradient) {
  Variable x = leaf({1, 2}, "x");
  Variable y = scale(x, 3);
  try {
    y.backward();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("scalar"), std::string::npos) << e.what();
  }
  y.backward(Tensor::from_values({1, 10}, {2}, DType::kF64));
  EXPECT_EQ(x.grad().to_vector(), (Values{3, 30}));
  EXPECT_THROW(y.backward(Tensor::ones({3}, DType::kF64)), Error);
  EXPECT_THROW(Variable(Tensor::zeros({2}, DType::kI64), true), Error);
}

TEST(Autograd, CheckpointGivesTheSameGradientsAndRepeatsTheRandomStream) {
  auto block = [](const std::vector<Variable>& in) {
    return std::vector<Variable>{mul(add_noise(scale(in[0], 2)), in[1])};
  };
  default_generator().manual_seed(5);
  Variable x1 = leaf({1, -2, 3}, "x"), w1 = leaf({0.5, 1.5, -1}, "w");
  Variable plain = sum(block({x1, w1})[0]);
  plain.backward();
  GeneratorState after_plain = default_generator().state();

  default_generator().manual_seed(5);
  Variable x2 = leaf({1, -2, 3}, "x"), w2 = leaf({0.5, 1.5, -1}, "w");
  Variable checkpointed = sum(checkpoint(block, {x2, w2})[0]);
  EXPECT_EQ(default_generator().state(), after_plain);
  checkpointed.backward();
  EXPECT_EQ(default_generator().state(), after_plain);  // the recompute does not advance it
  EXPECT_EQ(checkpointed.data().item(), plain.data().item());
  EXPECT_EQ(x2.grad().to_vector(), x1.grad().to_vector());
  EXPECT_EQ(w2.grad().to_vector(), w1.grad().to_vector());
}

TEST(Autograd, CheckpointRejectsVariablesItWasNotGiven) {
  Variable x = leaf({1, 2}, "x"), hidden = leaf({3, 4}, "hidden_weight");
  auto uses_hidden = [&](const std::vector<Variable>& in) { return std::vector<Variable>{mul(in[0], hidden)}; };
  Variable loss = sum(checkpoint(uses_hidden, {x})[0]);
  try {
    loss.backward();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("hidden_weight"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace zt::autograd
