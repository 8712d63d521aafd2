#include "serve/token_delivery.h"

#include <gtest/gtest.h>

#include <mutex>
#include <thread>
#include <vector>

namespace zt::serve {
namespace {

struct Seen {
  std::mutex mutex;
  std::vector<TokenDelivery::Update> updates;
  std::vector<std::thread::id> threads;
  void add(const TokenDelivery::Update& u) {
    std::lock_guard<std::mutex> lock(mutex);
    updates.push_back(u);
    threads.push_back(std::this_thread::get_id());
  }
};

TEST(TokenDelivery, DeliversEveryUpdateInTheOrderPostedOffThePostingThread) {
  Seen seen;
  {
    TokenDelivery delivery([&](const TokenDelivery::Update& u) { seen.add(u); });
    for (int step = 0; step < 50; ++step) {
      for (std::size_t id = 0; id < 4; ++id) delivery.post({.id = id, .token = step});
      delivery.flush();
    }
    delivery.post({.id = 2, .finished = true});
    delivery.drain();
    ASSERT_EQ(seen.updates.size(), 201u);
  }
  for (int step = 0; step < 50; ++step)
    for (std::size_t id = 0; id < 4; ++id) {
      const TokenDelivery::Update& u = seen.updates[static_cast<std::size_t>(step) * 4 + id];
      EXPECT_EQ(u.id, id);
      EXPECT_EQ(u.token, step);
      EXPECT_FALSE(u.finished);
    }
  EXPECT_TRUE(seen.updates.back().finished);
  EXPECT_EQ(seen.updates.back().id, 2u);
  for (const std::thread::id& t : seen.threads) EXPECT_NE(t, std::this_thread::get_id());
}

TEST(TokenDelivery, NothingIsDeliveredBeforeAFlush) {
  Seen seen;
  TokenDelivery delivery([&](const TokenDelivery::Update& u) { seen.add(u); });
  delivery.post({.id = 1, .token = 7});
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  {
    std::lock_guard<std::mutex> lock(seen.mutex);
    EXPECT_TRUE(seen.updates.empty());
  }
  delivery.drain();
  std::lock_guard<std::mutex> lock(seen.mutex);
  ASSERT_EQ(seen.updates.size(), 1u);
  EXPECT_EQ(seen.updates[0].token, 7);
}

TEST(TokenDelivery, TheDestructorDeliversWhatWasPosted) {
  Seen seen;
  {
    TokenDelivery delivery([&](const TokenDelivery::Update& u) { seen.add(u); });
    delivery.post({.id = 3, .token = 1});
    delivery.flush();
    delivery.post({.id = 3, .finished = true});  // posted, never flushed
  }
  ASSERT_EQ(seen.updates.size(), 2u);
  EXPECT_TRUE(seen.updates[1].finished);
}

}  // namespace
}  // namespace zt::serve
