// Gradient buckets (train/zero/gradient_buckets.h) on in-process ranks: whatever order the
// gradients come in, with or without overlap, in fp32 or bf16, every rank's partition ends
// holding its chunk of the sum over ranks and micro-batches, each gradient counted once; at
// most two staging buffers (and one reduction output) exist at once; nothing stays staged
// after finish().
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>

#include "distributed/communicators/inprocess_communicator.h"
#include "tests/train/zero/stage2_test_util.h"
#include "train/zero/gradient_buckets.h"

namespace zt::train {
namespace {

using namespace std::chrono_literals;

const std::vector<std::int64_t> kNumels = {5, 7, 3, 11, 2, 9, 4, 6};
constexpr int kWorld = 3;
constexpr int kMicroBatches = 2;

// Parameter p's gradient on `rank` in micro-batch `micro`: small integers, so that every sum
// is exact in bf16 as in fp32 and the expected partition is exact too.
std::vector<double> gradient(std::size_t p, int rank, int micro) {
  std::vector<double> values(static_cast<std::size_t>(kNumels[p]));
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<double>((static_cast<int>(p) * 7 + static_cast<int>(i) * 3 + rank * 5 + micro) % 9 - 4);
  return values;
}

// Each rank's expected partition: its chunk of every bucket of the summed gradients.
std::vector<double> expected_partition(const ZeroLayout& layout, int rank) {
  std::vector<double> partition(static_cast<std::size_t>(layout.partition_numel), 0.0);
  for (std::size_t b = 0; b < layout.buckets.size(); ++b)
    for (const OwnedPiece& piece : layout.owned_pieces(b, rank))
      for (std::int64_t i = 0; i < piece.numel; ++i)
        for (int r = 0; r < kWorld; ++r)
          for (int micro = 0; micro < kMicroBatches; ++micro)
            partition[static_cast<std::size_t>(layout.partition_offset(b) + piece.chunk_offset + i)] +=
                gradient(piece.parameter, r, micro)[static_cast<std::size_t>(piece.parameter_offset + i)];
  return partition;
}

struct Case {
  std::vector<std::size_t> order;  // the order the parameters' gradients arrive in
  bool overlap = false;
  DType dtype = DType::kF32;
};

std::string describe(const Case& c) {
  std::string order;
  for (std::size_t p : c.order) order += std::to_string(p) + " ";
  return "order " + order + (c.overlap ? "overlapped " : "") + dtype_name(c.dtype);
}

TEST(GradientBuckets, EveryRankGetsItsChunkOfTheSumWithinTwoStagedBuckets) {
  const ZeroLayout layout = make_zero_layout(kNumels, kWorld, 10);
  ASSERT_GE(layout.buckets.size(), 4u);
  const std::vector<std::size_t> backward = {7, 6, 5, 4, 3, 2, 1, 0};   // the layout's own order
  const std::vector<std::size_t> scrambled = {0, 7, 3, 5, 1, 6, 2, 4};  // every bucket opened early
  for (const Case& c : {Case{backward}, Case{backward, true}, Case{scrambled}, Case{scrambled, true},
                        Case{scrambled, true, DType::kBF16}, Case{backward, false, DType::kBF16}}) {
    std::mutex mutex;
    distributed::run_inprocess_ranks(kWorld, 10s, [&](distributed::Communicator& comm) {
      Tensor partition = Tensor::zeros({layout.partition_numel}, DType::kF32, Device::cpu());
      GradientBuckets buckets(layout, partition, comm, {.dtype = c.dtype, .overlap = c.overlap, .most_staged = 2},
                              [](std::size_t b) { return "bucket " + std::to_string(b); });
      for (int micro = 0; micro < kMicroBatches; ++micro) {
        for (std::size_t p : c.order) {
          const Tensor grad = Tensor::from_values(gradient(p, comm.rank(), micro), {kNumels[p]}, c.dtype);
          for (std::size_t b = 0; b < layout.buckets.size(); ++b) {
            const auto& members = layout.buckets[b].parameters;
            const auto slot = std::find(members.begin(), members.end(), p);
            if (slot != members.end()) buckets.add(b, static_cast<std::size_t>(slot - members.begin()), grad);
          }
        }
        buckets.finish();
        EXPECT_EQ(buckets.staged_bytes(), 0) << describe(c);
      }
      const std::int64_t bound = staging_bound(layout, static_cast<std::int64_t>(dtype_size(c.dtype)));
      std::lock_guard<std::mutex> lock(mutex);
      EXPECT_EQ(partition.to_vector(), expected_partition(layout, comm.rank())) << describe(c);
      EXPECT_GT(buckets.most_staged_bytes(), 0) << describe(c);
      EXPECT_LE(buckets.most_staged_bytes(), bound) << describe(c);
    });
  }
}

// Stage 0: one owner of everything (a layout of world size 1) on three ranks, each bucket
// all-reduced; the partition is the whole sum on every rank.
TEST(GradientBuckets, AllReducedBucketsGiveEveryRankTheWholeSum) {
  const ZeroLayout layout = make_zero_layout(kNumels, 1, 10);
  std::mutex mutex;
  distributed::run_inprocess_ranks(kWorld, 10s, [&](distributed::Communicator& comm) {
    Tensor partition = Tensor::zeros({layout.partition_numel}, DType::kF32, Device::cpu());
    GradientBuckets buckets(layout, partition, comm, {.all_reduce = true, .most_staged = 2},
                            [](std::size_t b) { return "bucket " + std::to_string(b); });
    for (int micro = 0; micro < kMicroBatches; ++micro) {
      for (std::size_t b = 0; b < layout.buckets.size(); ++b)
        for (std::size_t k = 0; k < layout.buckets[b].parameters.size(); ++k) {
          const std::size_t p = layout.buckets[b].parameters[k];
          buckets.add(b, k, Tensor::from_values(gradient(p, comm.rank(), micro), {kNumels[p]}, DType::kF32));
        }
      buckets.finish();
    }
    std::lock_guard<std::mutex> lock(mutex);
    EXPECT_EQ(partition.to_vector(), expected_partition(layout, 0));
    EXPECT_LE(buckets.most_staged_bytes(), staging_bound(layout, 4, false));
  });
}

}  // namespace
}  // namespace zt::train
