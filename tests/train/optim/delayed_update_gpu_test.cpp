// The delayed update on the GPU: the gradients leave on the offload's copy stream while the
// next step's work is queued, the CPU Adam runs on its own thread, and the weights land at the
// next step: the same weights as the immediate offload one step late, then equal after
// settle(); on the single-device optimizer and ZeRO-2 over two ranks sharing the GPU. Also:
// the gradients of the next step are not written before the started update has copied them
// (zero_grad() orders the compute stream after those copies).
#include <gtest/gtest.h>

#include <mutex>

#include "distributed/communicators/inprocess_communicator.h"
#include "tests/common/test_util.h"
#include "tests/train/optim/delayed_update_fixture.h"
#include "train/zero/zero_optimizer.h"

namespace zt::train {
namespace {

using namespace std::chrono_literals;
using namespace testing_delayed;

TEST(DelayedUpdateGpu, SingleDeviceWalksTheImmediateWeightsOneStepLate) {
  ZT_SKIP_WITHOUT_GPU();
  LinearModel a(Device::cuda()), b(Device::cuda());
  const Values initial = a.values();
  Optimizer immediate(a.parameters(), decaying(), offload(false));
  Optimizer delayed(b.parameters(), decaying(), offload(true));
  expect_delayed(run(delayed, b, 0), run(immediate, a, 0), initial, "single GPU");
}

TEST(DelayedUpdateGpu, ZeroTwoOnTwoRanksWalksTheImmediateWeightsOneStepLate) {
  ZT_SKIP_WITHOUT_GPU();
  std::mutex mutex;
  std::vector<Trajectory> now(2), late(2);
  Values initial;
  for (bool delayed : {false, true})
    distributed::run_inprocess_ranks(2, 30s, [&](distributed::Communicator& comm) {
      LinearModel model(Device::cuda());
      ZeroOptimizer optimizer(model.parameters(), decaying(), comm, 2, 11, offload(delayed));
      if (!delayed && comm.rank() == 0) initial = model.values();
      Trajectory t = run(optimizer, model, comm.rank());
      std::lock_guard<std::mutex> lock(mutex);
      (delayed ? late : now)[static_cast<std::size_t>(comm.rank())] = std::move(t);
    });
  for (std::size_t rank = 0; rank < 2; ++rank)
    expect_delayed(late[rank], now[rank], initial, "ZeRO-2 on the GPU, rank " + std::to_string(rank));
}

}  // namespace
}  // namespace zt::train
