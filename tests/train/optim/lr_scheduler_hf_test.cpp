// transformers' schedules beyond linear/cosine/constant (cosine_with_restarts, polynomial,
// inverse_sqrt, cosine_warmup_with_min_lr, warmup_stable_decay, cosine's num_cycles) and torch's
// ReduceLROnPlateau, against numbers computed from their Python formulas, and the options of
// --lr_scheduler_kwargs read as get_scheduler passes them.
//
// The expected rates come from transformers' optimization.py lambdas (and torch's
// ReduceLROnPlateau.step) re-implemented line for line in Python and printed with %.17g, e.g.
//   def restarts(s, nc=1, w=4, t=20):
//       if s < w: return float(s) / float(max(1, w))
//       p = float(s - w) / float(max(1, t - w))
//       if p >= 1.0: return 0.0
//       return max(0.0, 0.5 * (1.0 + math.cos(math.pi * ((float(nc) * p) % 1.0))))
//   print("%.17g" % (1e-3 * restarts(5, nc=3)))   # 0.00091573480615127266
// with peak 1e-3, 4 warmup steps and 20 training steps throughout.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/train/optim/lr_schedule_test_util.h"
#include "train/args/lr_scheduler_kwargs.h"
#include "train/optim/lr_scheduler.h"

namespace zt::train {
namespace {

using nlohmann::json;

// The config as --lr_scheduler_kwargs `kwargs` makes it; the test fails on any error.
LrScheduleConfig with_kwargs(ScheduleKind kind, const json& kwargs) {
  LrScheduleConfig config = hf(kind);
  std::vector<std::string> errors, warnings;
  read_lr_scheduler_kwargs(kwargs, config.peak_lr, config, errors, warnings);
  for (const std::string& error : errors) ADD_FAILURE() << error;
  return config;
}

std::vector<std::string> errors_of(ScheduleKind kind, const json& kwargs, double learning_rate = 1e-3) {
  LrScheduleConfig config = hf(kind);
  std::vector<std::string> errors, warnings;
  read_lr_scheduler_kwargs(kwargs, learning_rate, config, errors, warnings);
  return errors;
}

// The linear warmup these schedules start with: from 0 to the peak over the 4 warmup steps.
TEST(HfSchedules, LinearWarmupToThePeak) {
  for (const LrScheduleConfig& config :
       {with_kwargs(ScheduleKind::kCosineWithRestarts, {{"num_cycles", 3}}),
        with_kwargs(ScheduleKind::kPolynomial, json::object()), hf(ScheduleKind::kInverseSqrt),
        with_kwargs(ScheduleKind::kWarmupStableDecay, {{"num_decay_steps", 6}})}) {
    SCOPED_TRACE("schedule kind " + std::to_string(static_cast<int>(config.kind)));
    expect_rates(LrSchedule(config), {{0, 0.0}, {2, 0.00050000000000000001}, {4, 0.001}});
  }
}

TEST(HfSchedules, CosineTakesNumCycles) {
  LrSchedule wave(with_kwargs(ScheduleKind::kCosine, {{"num_cycles", 1}}));
  expect_rates(wave, {
                         {4, 0.001},
                         {8, 0.00050000000000000001},
                         {12, 0.0},  // the bottom of the wave, halfway
                         {19, 0.00096193976625564323},
                         {20, 0.001},  // and back up
                     });
}

TEST(HfSchedules, CosineWithHardRestarts) {
  LrSchedule three(with_kwargs(ScheduleKind::kCosineWithRestarts, {{"num_cycles", 3}}));
  expect_rates(three, {{5, 0.00091573480615127266},
                       {9, 9.6073597983847857e-06},
                       {10, 0.00096193976625564344},  // restarted near the top
                       {13, 0.00022221488349019903},
                       {19, 8.4265193848727333e-05},
                       {20, 0.0},  // progress 1: zero from then on
                       {25, 0.0}});
  // One cycle by default: cosine's half wave.
  LrSchedule one(with_kwargs(ScheduleKind::kCosineWithRestarts, json::object()));
  expect_rates(one, {{12, 0.00050000000000000001}, {19, 9.6073597983847857e-06}});
}

TEST(HfSchedules, PolynomialDecayToLrEnd) {
  LrSchedule linear(with_kwargs(ScheduleKind::kPolynomial, json::object()));  // lr_end 1e-7, power 1
  expect_rates(linear, {{12, 0.00050004999999999993}, {20, 9.9999999999999995e-08}, {21, 9.9999999999999995e-08}});
  LrSchedule squared(with_kwargs(ScheduleKind::kPolynomial, {{"lr_end", 1e-5}, {"power", 2}}));
  expect_rates(squared, {{4, 0.001},
                         {7, 0.00066355468749999997},
                         {12, 0.00025750000000000002},
                         {19, 1.3867187500000001e-05},
                         {20, 1.0000000000000001e-05},
                         {30, 1.0000000000000001e-05}});
}

TEST(HfSchedules, InverseSqrtOverTheWarmupOrTenThousandSteps) {
  LrSchedule warm(hf(ScheduleKind::kInverseSqrt));
  expect_rates(warm, {{5, 0.00089442719099991591}, {16, 0.00050000000000000001}, {100, 0.00020000000000000001}});
  LrScheduleConfig cold = hf(ScheduleKind::kInverseSqrt);
  cold.warmup_steps = 0;
  EXPECT_DOUBLE_EQ(LrSchedule(cold).rate(0), 0.001);
  EXPECT_DOUBLE_EQ(LrSchedule(cold).rate(30000), 0.00050000000000000001);
}

TEST(HfSchedules, CosineWarmupWithMinLr) {
  LrSchedule schedule(with_kwargs(ScheduleKind::kCosineWarmupWithMinLr, {{"min_lr_rate", 0.1}}));
  expect_rates(schedule, {{0, 0.00025000000000000001},  // (0 + 1) / 4: never zero
                          {1, 0.00050000000000000001},
                          {3, 0.001},
                          {4, 0.00099135337618145376},
                          {10, 0.00063779064490725775},
                          {19, 0.0001},
                          {20, 0.00010864662381854631}});
  LrSchedule started(
      with_kwargs(ScheduleKind::kCosineWarmupWithMinLr, {{"min_lr_rate", 0.1}, {"warmup_lr_rate", 0.2}}));
  expect_rates(started, {{0, 0.00020000000000000001}, {1, 0.00046666666666666666}, {3, 0.0010000000000000002}});
}

TEST(HfSchedules, WarmupStableDecay) {
  // 4 warmup + (20 - 4 - 6 = 10) stable + 6 decay steps, cosine decay to 0.
  LrSchedule schedule(with_kwargs(ScheduleKind::kWarmupStableDecay, {{"num_decay_steps", 6}}));
  expect_rates(schedule, {{13, 0.001},
                          {14, 0.001},  // the decay's first step
                          {16, 0.00075000000000000002},
                          {19, 6.6987298107780649e-05},
                          {20, 0.0},
                          {25, 0.0}});
  LrSchedule shaped(with_kwargs(ScheduleKind::kWarmupStableDecay, {{"num_decay_steps", 6},
                                                                   {"num_stable_steps", 5},
                                                                   {"warmup_type", "cosine"},
                                                                   {"decay_type", "1-sqrt"},
                                                                   {"min_lr_ratio", 0.1}}));
  expect_rates(shaped, {
                           {0, 0.0001},  // warmup starts at min_lr_ratio
                           {2, 0.00054999999999999992},
                           {8, 0.001},
                           {9, 0.001},
                           {11, 0.00048038475772933689},
                           {13, 0.00026515307716504656},
                           {14, 0.00017841616374225078},
                           {19, 0.0001},  // after the decay: the floor
                       });
  LrSchedule linear(with_kwargs(ScheduleKind::kWarmupStableDecay,
                                {{"num_decay_steps", 6}, {"decay_type", "linear"}, {"min_lr_ratio", 0.1}}));
  expect_rates(linear, {{17, 0.00055000000000000003}, {19, 0.00024999999999999995}});
  // Phases that do not add up to the training steps are worth a word.
  EXPECT_TRUE(lr_schedule_warnings(with_kwargs(ScheduleKind::kWarmupStableDecay, {{"num_decay_steps", 6}})).empty());
  const auto warnings = lr_schedule_warnings(
      with_kwargs(ScheduleKind::kWarmupStableDecay, {{"num_decay_steps", 6}, {"num_stable_steps", 5}}));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("make 15, but training runs 20 steps"), std::string::npos) << warnings[0];
}

// torch's ReduceLROnPlateau.step over a run of metrics (factor 0.5, patience 1, cooldown 1,
// min_lr 2e-4, threshold 1e-4 relative): the rate after each.
TEST(HfSchedules, ReduceLrOnPlateauFollowsTorch) {
  LrSchedule schedule(with_kwargs(ScheduleKind::kReduceOnPlateau,
                                  {{"factor", 0.5}, {"patience", 1}, {"cooldown", 1}, {"min_lr", 2e-4}}));
  EXPECT_DOUBLE_EQ(schedule.rate(0), 1e-3);  // no warmup, no step dependence
  const double metrics[] = {2.0, 1.9, 1.8999, 1.95, 1.96, 1.97, 1.98, 1.99, 1.5, 1.6, 1.7, 1.8};
  // 1.8999 is not below 1.9 * (1 - 1e-4): a bad evaluation; the second in a row reduces, the
  // next is cooldown; the floor stops the third reduction at min_lr.
  const double expected[] = {1e-3, 1e-3, 1e-3, 5e-4, 5e-4, 5e-4, 2.5e-4, 2.5e-4, 2.5e-4, 2.5e-4, 2e-4, 2e-4};
  for (std::size_t i = 0; i < std::size(metrics); ++i) {
    schedule.observe_metric(metrics[i]);
    EXPECT_DOUBLE_EQ(schedule.rate(100), expected[i]) << "after evaluation " << i + 1;
  }
  EXPECT_EQ(schedule.plateau_state().evaluations, 12);
  EXPECT_DOUBLE_EQ(schedule.plateau_state().best, 1.5);
  // mode max, absolute threshold 0.1, patience 0: 1.05 and 1.25 are not 0.1 better.
  LrSchedule maximize(with_kwargs(ScheduleKind::kReduceOnPlateau,
                                  {{"mode", "max"}, {"threshold_mode", "abs"}, {"threshold", 0.1}, {"patience", 0}}));
  const double scores[] = {1.0, 1.05, 1.2, 1.25};
  const double rates[] = {1e-3, 1e-4, 1e-4, 1.0000000000000001e-05};
  for (std::size_t i = 0; i < std::size(scores); ++i) {
    maximize.observe_metric(scores[i]);
    EXPECT_DOUBLE_EQ(maximize.rate(0), rates[i]) << "after evaluation " << i + 1;
  }
  // Other schedules ignore metrics.
  LrSchedule linear(hf(ScheduleKind::kLinear));
  EXPECT_FALSE(linear.observe_metric(1.0));
  EXPECT_DOUBLE_EQ(linear.rate(4), 1e-3);
}

TEST(HfSchedules, PlateauStateRestores) {
  LrSchedule first(with_kwargs(ScheduleKind::kReduceOnPlateau, {{"patience", 0}}));
  first.observe_metric(1.0);
  EXPECT_TRUE(first.observe_metric(1.0));
  LrSchedule resumed(with_kwargs(ScheduleKind::kReduceOnPlateau, {{"patience", 0}}));
  resumed.restore_plateau_state(first.plateau_state());
  EXPECT_DOUBLE_EQ(resumed.rate(0), 1e-4);
  EXPECT_TRUE(resumed.observe_metric(1.0));  // still against the best of 1.0
  EXPECT_DOUBLE_EQ(resumed.rate(0), 1e-5);
}

TEST(HfScheduleKwargs, UnknownAndMistypedOptionsAreErrors) {
  std::vector<std::string> errors = errors_of(ScheduleKind::kLinear, {{"num_cycles", 2}});
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0],
            "--lr_scheduler_kwargs for linear: num_cycles is not an option of this schedule (it takes none)");
  errors = errors_of(ScheduleKind::kPolynomial, {{"lr_end", "small"}, {"powr", 2}});
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[0].find("lr_end must be a number, got \"small\""), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("powr is not an option of this schedule (it takes lr_end, power)"), std::string::npos)
      << errors[1];
  errors = errors_of(ScheduleKind::kPolynomial, {{"lr_end", 1e-3}});
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("lr_end (0.001) must be smaller than the initial lr"), std::string::npos) << errors[0];
  errors = errors_of(ScheduleKind::kWarmupStableDecay, {{"decay_type", "exp"}});
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[0].find("num_decay_steps is required"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("decay_type \"exp\" is unknown; expected 'linear', 'cosine', '1-sqrt'"), std::string::npos)
      << errors[1];
  errors = errors_of(ScheduleKind::kWarmupStableDecay, {{"num_decay_steps", 2.5}});
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("num_decay_steps must be a whole number"), std::string::npos) << errors[0];
  errors = errors_of(ScheduleKind::kReduceOnPlateau, {{"factor", 1.5}, {"mode", "lowest"}});
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[0].find("mode \"lowest\" is unknown; expected 'min', 'max'"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("factor should be < 1.0"), std::string::npos) << errors[1];
}

TEST(HfScheduleKwargs, MinLrOrMinLrRateExactlyOnce) {
  EXPECT_NE(errors_of(ScheduleKind::kCosineWithMinLr, json::object()).at(0).find("one of min_lr or min_lr_rate"),
            std::string::npos);
  EXPECT_NE(errors_of(ScheduleKind::kCosineWithMinLr, {{"min_lr", 1e-5}, {"min_lr_rate", 0.1}})
                .at(0)
                .find("only one of min_lr or min_lr_rate should be set"),
            std::string::npos);
  EXPECT_DOUBLE_EQ(with_kwargs(ScheduleKind::kCosineWithMinLr, {{"min_lr", 1e-4}}).min_lr_rate, 1e-4 / 1e-3);
  EXPECT_NE(errors_of(ScheduleKind::kCosineWithMinLr, {{"min_lr_rate", 1.5}}).at(0).find("min_lr_rate in [0, 1]"),
            std::string::npos);
  // A null option is Python's None: the default stands.
  EXPECT_FALSE(with_kwargs(ScheduleKind::kCosine, {{"num_cycles", nullptr}}).hf.num_cycles.has_value());
}

TEST(HfScheduleKwargs, OptionsTransformersDropsAreWarnedAbout) {
  for (ScheduleKind kind : {ScheduleKind::kConstant, ScheduleKind::kConstantWithWarmup, ScheduleKind::kInverseSqrt}) {
    LrScheduleConfig config = hf(kind);
    std::vector<std::string> errors, warnings;
    read_lr_scheduler_kwargs({{"timescale", 100}}, 1e-3, config, errors, warnings);
    EXPECT_TRUE(errors.empty());
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("has no effect: transformers' get_scheduler passes no options"), std::string::npos)
        << warnings[0];
  }
}

}  // namespace
}  // namespace zt::train
