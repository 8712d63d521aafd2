#include "serve/throughput_log.h"

#include <gtest/gtest.h>

namespace zt::serve {
namespace {

using Clock = ThroughputLog::Clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

StepFigures decode_step(std::int64_t sequences) {
  return {.took = milliseconds(4), .prompt_tokens = 0, .generated_tokens = sequences, .running = 2, .waiting = 1};
}

TEST(ThroughputLog, SaysNothingBeforeTheIntervalHasPassed) {
  const Clock::time_point start{};
  ThroughputLog log(seconds(10), start);
  EXPECT_FALSE(log.add(decode_step(2), start + seconds(3)));
  EXPECT_FALSE(log.add(decode_step(2), start + seconds(9)));
}

TEST(ThroughputLog, ReportsTheIntervalsRatesRequestsAndSteps) {
  const Clock::time_point start{};
  ThroughputLog log(seconds(10), start);
  EXPECT_FALSE(
      log.add({.took = milliseconds(20), .prompt_tokens = 300, .generated_tokens = 3, .running = 3, .waiting = 0},
              start + milliseconds(20)));
  EXPECT_FALSE(log.add(decode_step(3), start + seconds(5)));
  const auto line = log.add(decode_step(4), start + seconds(10));
  ASSERT_TRUE(line);
  // 300 prompt tokens and 10 generated over 10 s; three steps of 28 ms, one with prompts.
  EXPECT_EQ(*line,
            "serve: 10.0 s: prompt 30.0 tokens/s, generation 1.0 tokens/s; 2 running, 1 waiting; 3 steps of 9.33 ms "
            "mean, 1 of them with prompts (20.00 ms mean)");
}

TEST(ThroughputLog, StartsAFreshIntervalAfterEachLine) {
  const Clock::time_point start{};
  ThroughputLog log(seconds(10), start);
  EXPECT_FALSE(log.add(decode_step(2), start + milliseconds(4)));
  ASSERT_TRUE(log.add(decode_step(2), start + seconds(10)));
  EXPECT_FALSE(log.add(decode_step(2), start + seconds(10) + milliseconds(4)));
  const auto line = log.add(decode_step(2), start + seconds(20));
  ASSERT_TRUE(line);
  EXPECT_NE(line->find("generation 0.4 tokens/s"), std::string::npos) << *line;
  EXPECT_NE(line->find("2 steps of 4.00 ms mean, 0 of them with prompts"), std::string::npos) << *line;
  EXPECT_EQ(line->find("ms mean)"), std::string::npos) << *line;
}

TEST(ThroughputLog, FlushReportsWhatIsPendingOnceAndIdleTimeIsNotCounted) {
  const Clock::time_point start{};
  ThroughputLog log(seconds(10), start);
  EXPECT_FALSE(log.flush(start + seconds(1)));
  // Idle until 2 s: the interval starts with the step (2 tokens in 2 s, not in 4).
  log.add(decode_step(2), start + seconds(2) + milliseconds(4));
  const auto line = log.flush(start + seconds(4) + milliseconds(4));
  ASSERT_TRUE(line);
  EXPECT_EQ(line->rfind("serve: 2.0 s: prompt 0.0 tokens/s, generation 1.0 tokens/s", 0), 0u) << *line;
  EXPECT_FALSE(log.flush(start + seconds(5)));
}

}  // namespace
}  // namespace zt::serve
