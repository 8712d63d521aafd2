// In-process ranks: every collective's result on every rank, identical bits across ranks,
// and failures (mismatched collectives, a missing rank, a crashed rank) that end every
// rank with a message instead of a hang.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>

#include "distributed/communicators/inprocess_communicator.h"
#include "runtime/rank.h"
#include "tests/common/op_test_util.h"

namespace zt::distributed {
namespace {

using namespace std::chrono_literals;

Tensor ramp(std::int64_t n, double offset, DType dtype = DType::kF32) {
  std::vector<double> values;
  for (std::int64_t i = 0; i < n; ++i) values.push_back(offset + static_cast<double>(i));
  return Tensor::from_values(values, {n}, dtype);
}

TEST(InProcessRanks, AllReduceSumAndMaxOnEveryRank) {
  std::atomic<int> checked = 0;
  run_inprocess_ranks(4, 5000ms, [&](Communicator& comm) {
    Tensor sum = ramp(5, comm.rank());
    comm.all_reduce(sum, ReduceOp::kSum);
    EXPECT_EQ(sum.to_vector(), (std::vector<double>{6, 10, 14, 18, 22}));  // 0+1+2+3 + 4i
    Tensor max = ramp(3, 10.0 * comm.rank(), DType::kBF16);
    comm.all_reduce(max, ReduceOp::kMax);
    EXPECT_EQ(max.to_vector(), (std::vector<double>{30, 31, 32}));
    ++checked;
  });
  EXPECT_EQ(checked, 4);
}

TEST(InProcessRanks, ReduceScatterThenAllGatherIsAllReduce) {
  run_inprocess_ranks(3, 5000ms, [&](Communicator& comm) {
    EXPECT_EQ(current_rank().local_world_size, 3) << "the ranks share the process's cores";
    Tensor input = testing::random_tensor({12}, 100 + comm.rank(), DType::kF32);
    Tensor reference = input.clone();
    comm.all_reduce(reference);
    Tensor shard = Tensor::empty({4}, DType::kF32, Device::cpu());
    comm.reduce_scatter(input, shard);
    Tensor gathered = Tensor::empty({12}, DType::kF32, Device::cpu());
    comm.all_gather(shard, gathered);
    EXPECT_EQ(gathered.to_vector(), reference.to_vector()) << "rank " << comm.rank();
  });
}

TEST(InProcessRanks, BroadcastFromAnyRoot) {
  run_inprocess_ranks(3, 5000ms, [&](Communicator& comm) {
    Tensor buffer = ramp(4, 100.0 * comm.rank());
    comm.broadcast(buffer, 2);
    EXPECT_EQ(buffer.to_vector(), (std::vector<double>{200, 201, 202, 203}));
    comm.barrier();
  });
}

// One rank: every collective leaves the input as it is (copied into a separate output, cast
// where the dtypes differ), and shape errors are still named.
TEST(InProcessRanks, OneRankCopiesWithoutMeetingAnyone) {
  run_inprocess_ranks(1, 1000ms, [](Communicator& comm) {
    Tensor buffer = ramp(4, 7.5);
    comm.all_reduce(buffer, ReduceOp::kSum);
    comm.broadcast(buffer, 0);
    comm.barrier();
    EXPECT_EQ(current_rank().local_world_size, 1);
    EXPECT_EQ(buffer.to_vector(), (std::vector<double>{7.5, 8.5, 9.5, 10.5}));
    Tensor gathered = Tensor::empty({4}, DType::kBF16, Device::cpu());
    comm.all_gather(buffer, gathered);
    EXPECT_EQ(gathered.to_vector(), buffer.to_vector());
    Tensor reduced = Tensor::empty({4}, DType::kF32, Device::cpu());
    comm.reduce_scatter(gathered, reduced);
    EXPECT_EQ(reduced.to_vector(), buffer.to_vector());
    Tensor wrong = Tensor::empty({3}, DType::kF32, Device::cpu());
    testing::expect_mentions(testing::error_of([&] { comm.all_gather(buffer, wrong); }),
                             {"all_gather", "world_size 1"});
  });
}

TEST(InProcessRanks, MismatchedCollectivesFailEveryRankNamingBoth) {
  std::string msg = testing::error_of([] {
    run_inprocess_ranks(2, 5000ms, [](Communicator& comm) {
      Tensor t = ramp(comm.rank() == 0 ? 4 : 8, 0);
      comm.all_reduce(t);
    });
  });
  testing::expect_mentions(msg, {"all_reduce(sum) of 4", "all_reduce(sum) of 8", "same collectives"});
}

TEST(InProcessRanks, AMissingRankTimesOutWithTheCollectiveNamed) {
  auto start = std::chrono::steady_clock::now();
  std::string msg = testing::error_of([] {
    run_inprocess_ranks(3, 200ms, [](Communicator& comm) {
      if (comm.rank() == 1) std::this_thread::sleep_for(600ms);  // late beyond the timeout
      Tensor t = ramp(16, 0);
      comm.all_reduce(t);
    });
  });
  testing::expect_mentions(msg, {"all_reduce(sum) of 16 float32", "did not complete within", "NCCL_DEBUG=INFO"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST(InProcessRanks, ACrashedRankEndsTheOthersAtOnce) {
  auto start = std::chrono::steady_clock::now();
  std::string msg = testing::error_of([] {
    run_inprocess_ranks(3, 60000ms, [](Communicator& comm) {
      if (comm.rank() == 2) throw Error("rank 2 ran out of memory");
      Tensor t = ramp(4, 0);
      comm.all_reduce(t);
    });
  });
  EXPECT_EQ(msg, "rank 2 ran out of memory");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);  // not the 60 s timeout
}

TEST(InProcessRanks, SizeErrorsAreNamed) {
  std::string msg = testing::error_of([] {
    run_inprocess_ranks(2, 1000ms, [](Communicator& comm) {
      Tensor out = Tensor::empty({3}, DType::kF32, Device::cpu());
      comm.reduce_scatter(ramp(5, 0), out);
    });
  });
  testing::expect_mentions(msg, {"reduce_scatter", "5 elements", "world_size 2"});
}

}  // namespace
}  // namespace zt::distributed
