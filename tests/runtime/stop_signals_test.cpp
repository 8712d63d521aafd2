// Stop signals as requests: the first SIGINT or SIGTERM is recorded and the process goes on;
// a second ends it at once, killed by that signal; scopes nest, and the handlers that were
// there before come back when the last scope ends.
#include <gtest/gtest.h>

#include <signal.h>

#include <cstdlib>

#include "runtime/stop_signals.h"

namespace zt {
namespace {

TEST(StopSignals, TheFirstSignalIsOnlyRecorded) {
  {
    StopSignalScope scope;
    EXPECT_EQ(stop_signal_received(), 0);
    ASSERT_EQ(raise(SIGTERM), 0);
    EXPECT_EQ(stop_signal_received(), SIGTERM);
    EXPECT_STREQ(stop_signal_name(stop_signal_received()), "SIGTERM");
  }
  StopSignalScope again;
  EXPECT_EQ(stop_signal_received(), 0) << "a new outermost scope starts with no request";
}

TEST(StopSignals, ScopesNestAndThePreviousHandlerComesBack) {
  struct sigaction before {};
  sigaction(SIGINT, nullptr, &before);
  {
    StopSignalScope outer;
    {
      StopSignalScope inner;
      ASSERT_EQ(raise(SIGINT), 0);
    }
    EXPECT_EQ(stop_signal_received(), SIGINT) << "the inner scope's end kept the outer's handler and record";
    struct sigaction during {};
    sigaction(SIGINT, nullptr, &during);
    EXPECT_NE(during.sa_handler, before.sa_handler);
  }
  struct sigaction after {};
  sigaction(SIGINT, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
}

TEST(StopSignalsDeathTest, ASecondSignalEndsTheProcessAtOnce) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        StopSignalScope scope;
        raise(SIGINT);
        raise(SIGINT);
        std::_Exit(0);  // not reached
      },
      ::testing::KilledBySignal(SIGINT), "");
  EXPECT_EXIT(
      {
        StopSignalScope scope;
        raise(SIGINT);
        raise(SIGTERM);
        std::_Exit(0);
      },
      ::testing::KilledBySignal(SIGTERM), "");
}

}  // namespace
}  // namespace zt
