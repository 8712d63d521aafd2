// The TCP rendezvous: every rank gets rank 0's payload; a wrong token, a malformed or silent
// connection, or a flood of them neither crash nor stall rank 0; missing ranks and a missing
// rank 0 end in errors that say what to check.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "distributed/launch/rendezvous.h"
#include "distributed/launch/rendezvous_wire.h"
#include "distributed/launch/socket.h"
#include "tests/common/op_test_util.h"
#include "tests/common/process_test_util.h"

namespace zt::distributed {
namespace {

using namespace std::chrono_literals;

RendezvousConfig config(int world_size) {
  RendezvousConfig c;
  c.port = zt::testing::free_loopback_port();
  c.token = "job-1234";
  c.world_size = world_size;
  c.timeout = 10s;
  c.peer_timeout = 500ms;
  return c;
}

const std::vector<std::uint8_t> kPayload = {1, 2, 3, 250, 0, 7};

TEST(Rendezvous, EveryRankGetsThePayload) {
  RendezvousConfig c = config(4);
  auto server = std::async(std::launch::async, [&] { serve_rendezvous(c, kPayload); });
  std::vector<std::future<std::vector<std::uint8_t>>> clients;
  for (int rank = 1; rank < 4; ++rank)
    clients.push_back(std::async(std::launch::async, [&, rank] { return join_rendezvous(c, rank); }));
  for (auto& client : clients) EXPECT_EQ(client.get(), kPayload);
  server.get();
}

TEST(Rendezvous, AWrongTokenIsRefusedAndTheJobGoesOn) {
  RendezvousConfig c = config(2);
  auto server = std::async(std::launch::async, [&] { serve_rendezvous(c, kPayload); });
  RendezvousConfig intruder = c;
  intruder.token = "guess";
  testing::expect_mentions(testing::error_of([&] { join_rendezvous(intruder, 1); }), {"ZT_JOB_TOKEN"});
  EXPECT_EQ(join_rendezvous(c, 1), kPayload);
  server.get();
}

// Raw connections: garbage, a silent peer, a header announcing a huge token, a flood.
void attack(int port) {
  auto open = [&] { return connect_to("127.0.0.1", port, 1s); };
  std::vector<Socket> held;
  Socket silent = open();
  Socket garbage = open();
  send_all(garbage.fd(), std::vector<std::uint8_t>(100, 0xAB), 1s);
  Socket huge = open();
  std::vector<std::uint8_t> header = {'Z', 'T', 'R', 'V'};
  wire::put_u32(header, wire::kVersion);
  wire::put_u32(header, 1);
  wire::put_u32(header, 2);
  wire::put_u32(header, 0xFFFFFFFFu);
  send_all(huge.fd(), header, 1s);
  for (int i = 0; i < 100; ++i) held.push_back(open());
  std::this_thread::sleep_for(300ms);
}

TEST(Rendezvous, HostileConnectionsNeitherCrashNorStallRankZero) {
  RendezvousConfig c = config(3);
  auto server = std::async(std::launch::async, [&] { serve_rendezvous(c, kPayload); });
  std::this_thread::sleep_for(100ms);
  auto attacker = std::async(std::launch::async, [&] { attack(c.port); });
  std::this_thread::sleep_for(50ms);
  const auto start = std::chrono::steady_clock::now();
  auto one = std::async(std::launch::async, [&] { return join_rendezvous(c, 1); });
  auto two = std::async(std::launch::async, [&] { return join_rendezvous(c, 2); });
  EXPECT_EQ(one.get(), kPayload);
  EXPECT_EQ(two.get(), kPayload);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  server.get();
  attacker.get();
}

TEST(Rendezvous, MissingRanksAreNamedWhenRankZeroTimesOut) {
  RendezvousConfig c = config(3);
  c.timeout = 700ms;
  auto server =
      std::async(std::launch::async, [&] { return testing::error_of([&] { serve_rendezvous(c, kPayload); }); });
  EXPECT_EQ(join_rendezvous(c, 1), kPayload);
  testing::expect_mentions(server.get(), {"rank(s) 2 never joined", "ZT_JOB_TOKEN"});
}

TEST(Rendezvous, NoRankZeroIsATimeoutNamingTheAddress) {
  RendezvousConfig c = config(2);
  c.timeout = 400ms;
  const std::string expected = "no rendezvous with rank 0 at 127.0.0.1:" + std::to_string(c.port);
  testing::expect_mentions(testing::error_of([&] { join_rendezvous(c, 1); }), {expected.c_str(), "MASTER_ADDR"});
}

}  // namespace
}  // namespace zt::distributed
