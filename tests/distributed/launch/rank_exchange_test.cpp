// The rank exchange Gloo jobs start with: every rank gets every rank's blob in rank order; a
// wrong token is refused while the job goes on; a rank that never comes is named.
#include <gtest/gtest.h>

#include <future>

#include "distributed/launch/rank_exchange.h"
#include "tests/common/op_test_util.h"
#include "tests/common/process_test_util.h"

namespace zt::distributed {
namespace {

using namespace std::chrono_literals;
using Blobs = std::vector<std::vector<std::uint8_t>>;

RendezvousConfig config(int world_size, std::chrono::milliseconds timeout = 10s) {
  RendezvousConfig c;
  c.port = zt::testing::free_loopback_port();
  c.token = "job-5678";
  c.world_size = world_size;
  c.timeout = timeout;
  c.peer_timeout = 500ms;
  return c;
}

// Rank r's blob: r + 1 bytes of value r, so sizes and contents differ.
std::vector<std::uint8_t> blob_of(int rank) {
  return std::vector<std::uint8_t>(static_cast<std::size_t>(rank + 1), rank);
}

TEST(RankExchange, EveryRankGetsEveryBlobInRankOrder) {
  const RendezvousConfig c = config(4);
  std::vector<std::future<Blobs>> ranks;
  for (int rank = 3; rank >= 0; --rank)  // rank 0 last: the others wait for it to listen
    ranks.push_back(
        std::async(std::launch::async, [&, rank] { return exchange_with_all_ranks(c, rank, blob_of(rank)); }));
  const Blobs expected = {blob_of(0), blob_of(1), blob_of(2), blob_of(3)};
  for (auto& rank : ranks) EXPECT_EQ(rank.get(), expected);
}

TEST(RankExchange, AWrongTokenIsRefusedAndTheJobGoesOn) {
  const RendezvousConfig c = config(2);
  auto rank0 = std::async(std::launch::async, [&] { return exchange_with_all_ranks(c, 0, blob_of(0)); });
  RendezvousConfig intruder = c;
  intruder.token = "guess";
  intruder.timeout = 2s;
  testing::expect_mentions(testing::error_of([&] {
                             exchange_with_all_ranks(intruder, 1, {9, 9});
                           }),
                           {"rank 1: rank 0 at 127.0.0.1:", "ZT_JOB_TOKEN"});
  const Blobs expected = {blob_of(0), blob_of(1)};
  EXPECT_EQ(exchange_with_all_ranks(c, 1, blob_of(1)), expected);
  EXPECT_EQ(rank0.get(), expected);
}

TEST(RankExchange, ARankThatNeverComesIsNamed) {
  const RendezvousConfig c = config(3, 1s);
  auto rank1 = std::async(std::launch::async,
                          [&] { return testing::error_of([&] { exchange_with_all_ranks(c, 1, blob_of(1)); }); });
  testing::expect_mentions(testing::error_of([&] { exchange_with_all_ranks(c, 0, blob_of(0)); }),
                           {"rank 0: the rank exchange at 127.0.0.1:", "rank(s) 2 never joined"});
  testing::expect_mentions(rank1.get(), {"rank 1: rank 0 at 127.0.0.1:", "gave no answer"});
}

}  // namespace
}  // namespace zt::distributed
