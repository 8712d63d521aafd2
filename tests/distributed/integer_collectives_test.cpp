// The collectives ranks agree with: integers exactly up to 2^53, and text byte for byte
// (every byte value, any length) through the in-process communicator, which computes in double.
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "distributed/communicators/inprocess_communicator.h"
#include "distributed/integer_collectives.h"

namespace zt::distributed {
namespace {

TEST(IntegerCollectives, TextReachesEveryRankByteForByte) {
  std::string every_byte;
  for (int i = 0; i < 4099; ++i) every_byte.push_back(static_cast<char>(i * 7 % 256));
  for (const std::string& text : {std::string(), std::string("plan"), every_byte}) {
    std::mutex mutex;
    std::vector<std::string> received(3);
    run_inprocess_ranks(3, std::chrono::seconds(30), [&](Communicator& comm) {
      const std::string mine = comm.rank() == 1 ? text : "what a non-root rank passes is ignored";
      const std::string got = broadcast_text(comm, mine, 1, Device::cpu());
      std::lock_guard<std::mutex> lock(mutex);
      received[static_cast<std::size_t>(comm.rank())] = got;
    });
    for (const std::string& got : received) EXPECT_EQ(got, text) << "length " << text.size();
  }
}

TEST(IntegerCollectives, IntegersUpToTwoToThe53AreExact) {
  const std::vector<std::int64_t> values{0, -1, (std::int64_t{1} << 53), -(std::int64_t{1} << 53) + 3};
  run_inprocess_ranks(2, std::chrono::seconds(30), [&](Communicator& comm) {
    const std::vector<std::int64_t> got =
        broadcast_integers(comm, comm.rank() == 0 ? values : std::vector<std::int64_t>(4, 5), 0, Device::cpu());
    EXPECT_EQ(got, values);
    EXPECT_EQ(min_over_ranks(comm, comm.rank() == 0 ? -7 : 12, Device::cpu()), -7);
    EXPECT_EQ(max_over_ranks(comm, comm.rank() == 0 ? -7 : 12, Device::cpu()), 12);
  });
}

}  // namespace
}  // namespace zt::distributed
