// Multi-tensor AdamW on the CPU: bit-equality with one adamw_step per parameter, the weight
// decay defaulting to the config's, the all-or-nothing skip on a non-finite gradient, errors.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "ops/optim/adamw.h"
#include "tests/common/op_test_util.h"

namespace zt {
namespace {

using testing::error_of;
using testing::expect_mentions;

struct ParamState {
  Tensor master, exp_avg, exp_avg_sq, working;
};

ParamState fresh(const Shape& shape, std::uint64_t seed, DType working_dtype) {
  Tensor master = Tensor::normal(shape, seed, 0, 0.0, 1.0, DType::kF32);
  Tensor working = Tensor::empty(shape, working_dtype);
  working.copy_from(master);
  return {master, Tensor::normal(shape, seed, 1, 0.0, 0.1, DType::kF32),
          Tensor::uniform(shape, seed, 2, 0.0, 0.01, DType::kF32), working};
}

TEST(AdamWMulti, EqualsOneAdamWStepPerParameterBitForBit) {
  const Shape shapes[] = {{0}, {5}, {3, 7}, {1}, {0, 4}, {130}};
  const double decays[] = {0.1, 0.0, 0.3, 0.1, 0.1, 0.0};
  const DType grad_dtypes[] = {DType::kF32, DType::kBF16, DType::kF16, DType::kF32, DType::kBF16, DType::kF32};
  std::vector<ParamState> multi, single;
  for (std::size_t i = 0; i < std::size(shapes); ++i) {
    multi.push_back(fresh(shapes[i], 20 + i, i % 2 ? DType::kBF16 : DType::kF16));
    single.push_back(fresh(shapes[i], 20 + i, i % 2 ? DType::kBF16 : DType::kF16));
  }
  ops::AdamWConfig config{3e-3, 0.9, 0.95, 1e-8, 0.1, 1, 4.0};
  for (std::int64_t step = 1; step <= 4; ++step) {
    config.step = step;
    std::vector<ops::AdamWParam> params;
    for (std::size_t i = 0; i < std::size(shapes); ++i) {
      Tensor grad = Tensor::normal(shapes[i], 100 * step + i, 0, 0.0, 4.0, grad_dtypes[i]);
      params.push_back({multi[i].master, multi[i].exp_avg, multi[i].exp_avg_sq, grad, multi[i].working, decays[i]});
      ops::AdamWConfig own = config;
      own.hyperparameters.weight_decay = decays[i];
      EXPECT_FALSE(
          ops::adamw_step(single[i].master, single[i].exp_avg, single[i].exp_avg_sq, grad, own, single[i].working)
              .item());
    }
    EXPECT_FALSE(ops::adamw_step_multi(params, config).item());
  }
  for (std::size_t i = 0; i < std::size(shapes); ++i) {
    std::string what = "param " + std::to_string(i);
    EXPECT_EQ(multi[i].master.to_vector(), single[i].master.to_vector()) << what;
    EXPECT_EQ(multi[i].exp_avg.to_vector(), single[i].exp_avg.to_vector()) << what;
    EXPECT_EQ(multi[i].exp_avg_sq.to_vector(), single[i].exp_avg_sq.to_vector()) << what;
    EXPECT_EQ(multi[i].working.to_vector(), single[i].working.to_vector()) << what;
  }
}

TEST(AdamWMulti, WeightDecayDefaultsToTheConfigs) {
  ParamState a = fresh({9}, 1, DType::kBF16), b = fresh({9}, 1, DType::kBF16);
  Tensor grad = Tensor::normal({9}, 2, 0, 0.0, 1.0, DType::kF32);
  ops::AdamWConfig config{1e-2, 0.9, 0.999, 1e-8, 0.5, 1, 1.0};
  ops::adamw_step_multi({{a.master, a.exp_avg, a.exp_avg_sq, grad, Tensor(), std::nullopt}}, config);
  ops::adamw_step(b.master, b.exp_avg, b.exp_avg_sq, grad, config);
  EXPECT_EQ(a.master.to_vector(), b.master.to_vector());
  ops::adamw_step_multi({{a.master, a.exp_avg, a.exp_avg_sq, grad, Tensor(), 0.0}}, config);
  config.hyperparameters.weight_decay = 0.0;
  ops::adamw_step(b.master, b.exp_avg, b.exp_avg_sq, grad, config);
  EXPECT_EQ(a.master.to_vector(), b.master.to_vector());
}

TEST(AdamWMulti, ANonFiniteGradientAnywhereSkipsEveryParameter) {
  std::vector<ParamState> states{fresh({4}, 1, DType::kBF16), fresh({6}, 2, DType::kBF16), fresh({3}, 3, DType::kF16)};
  std::vector<std::vector<double>> before;
  for (const ParamState& s : states) before.push_back(s.master.to_vector());
  std::vector<double> bad(6, 0.5);
  bad[4] = std::numeric_limits<double>::quiet_NaN();
  std::vector<ops::AdamWParam> params{{states[0].master, states[0].exp_avg, states[0].exp_avg_sq,
                                       Tensor::ones({4}, DType::kF32), states[0].working, std::nullopt},
                                      {states[1].master, states[1].exp_avg, states[1].exp_avg_sq,
                                       Tensor::from_values(bad, {6}, DType::kBF16), states[1].working, std::nullopt},
                                      {states[2].master, states[2].exp_avg, states[2].exp_avg_sq,
                                       Tensor::ones({3}, DType::kF16), states[2].working, std::nullopt}};
  EXPECT_TRUE(ops::adamw_step_multi(params, {}).item());
  for (std::size_t i = 0; i < states.size(); ++i) EXPECT_EQ(states[i].master.to_vector(), before[i]) << i;
  EXPECT_FALSE(ops::adamw_step_multi({}, {}).item());
}

TEST(AdamWMulti, BadArgumentsNameTheParameter) {
  ParamState s = fresh({4}, 1, DType::kBF16);
  Tensor grad = Tensor::ones({4}, DType::kF32);
  std::vector<ops::AdamWParam> params{
      {s.master, s.exp_avg, s.exp_avg_sq, grad, s.working, std::nullopt},
      {s.master, s.exp_avg, s.exp_avg_sq, Tensor::ones({5}, DType::kF32), s.working, std::nullopt}};
  expect_mentions(error_of([&] { ops::adamw_step_multi(params, {}); }),
                  {"adamw_step_multi", "params[1].grad", "[5]", "[4]"});
  params[1] = {s.master, s.exp_avg.to(DType::kBF16), s.exp_avg_sq, grad, s.working, std::nullopt};
  expect_mentions(error_of([&] { ops::adamw_step_multi(params, {}); }), {"params[1].exp_avg", "bfloat16"});
}

}  // namespace
}  // namespace zt
