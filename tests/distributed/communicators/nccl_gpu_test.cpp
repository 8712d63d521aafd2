// NCCL at world size 1 on one GPU: the communicator starts through the rendezvous path and
// every collective gives the identity a one-rank job must give. Larger worlds need several
// GPUs (the multi-GPU runs).
#include <gtest/gtest.h>

#include "distributed/communicators/nccl_communicator.h"
#include "tests/common/op_test_util.h"
#include "tests/common/test_util.h"

namespace zt::distributed {
namespace {

using namespace std::chrono_literals;

TEST(NcclGpu, EveryCollectiveAtWorldSizeOne) {
  ZT_SKIP_WITHOUT_GPU();
  RendezvousConfig rendezvous;
  rendezvous.world_size = 1;
  NcclCommunicator comm(0, rendezvous, 60s);
  EXPECT_EQ(comm.world_size(), 1);
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    Tensor cpu = testing::random_tensor({1000}, 3, dtype);
    Tensor buffer = cpu.to(Device::cuda());
    comm.all_reduce(buffer, ReduceOp::kSum);
    EXPECT_EQ(buffer.to_vector(), cpu.to_vector());
    Tensor out = Tensor::empty({1000}, dtype, Device::cuda());
    comm.reduce_scatter(buffer, out);
    EXPECT_EQ(out.to_vector(), cpu.to_vector());
    Tensor started = Tensor::empty({1000}, dtype, Device::cuda());
    comm.start_reduce_scatter(buffer, started)->wait();
    EXPECT_EQ(started.to_vector(), cpu.to_vector());
    Tensor gathered = Tensor::empty({1000}, dtype, Device::cuda());
    comm.all_gather(out, gathered);
    EXPECT_EQ(gathered.to_vector(), cpu.to_vector());
    comm.broadcast(gathered, 0);
    comm.barrier();
  }
  testing::expect_mentions(
      testing::error_of([&] { comm.all_reduce(Tensor::zeros({4}, DType::kF32, Device::cpu()), ReduceOp::kSum); }),
      {"contiguous CUDA tensor"});
}

}  // namespace
}  // namespace zt::distributed
