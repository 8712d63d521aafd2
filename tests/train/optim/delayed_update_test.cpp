// Optimizer offload's delayed update (--offload_delayed_update, ZeRO-Offload's one-step DPU)
// on the CPU: the same updates as the immediate offload, each landing one step later. The
// gradients here do not depend on the weights (a loss linear in them), so both runs see the
// same gradients and must walk the same sequence of weights, the delayed one a step behind
// until settle() lands its last update; on the single-device optimizer and ZeRO stages 1-2
// over in-process ranks, with clipping, decay and accumulation. Also: the core refuses what
// the delayed update cannot run (a partial offload, gradients in the host block).
#include <gtest/gtest.h>

#include <mutex>

#include "distributed/communicators/inprocess_communicator.h"
#include "runtime/error.h"
#include "tests/train/optim/delayed_update_fixture.h"
#include "train/zero/zero_optimizer.h"

namespace zt::train {
namespace {

using namespace std::chrono_literals;
using namespace testing_delayed;

TEST(DelayedUpdate, SingleDeviceWalksTheImmediateWeightsOneStepLate) {
  LinearModel a, b;
  const Values initial = a.values();
  Optimizer immediate(a.parameters(), decaying(), offload(false));
  Optimizer delayed(b.parameters(), decaying(), offload(true));
  const Trajectory now = run(immediate, a, 0);
  const Trajectory late = run(delayed, b, 0);
  expect_delayed(late, now, initial, "single device");
  EXPECT_NE(now.after_step.back(), initial);
  // The landed update's figures are reported, as an immediate one's are.
  EXPECT_GT(delayed.offload()->last_step().parameters, 0);
  EXPECT_EQ(delayed.state_dict().at("w.exp_avg").to_vector(), immediate.state_dict().at("w.exp_avg").to_vector());
}

std::vector<Trajectory> run_zero(int world, int stage, bool delayed, Values* initial) {
  std::mutex mutex;
  std::vector<Trajectory> out(static_cast<std::size_t>(world));
  distributed::run_inprocess_ranks(world, 20s, [&](distributed::Communicator& comm) {
    LinearModel model;
    ZeroOptimizer optimizer(model.parameters(), decaying(), comm, stage, 11, offload(delayed));
    if (initial && comm.rank() == 0) *initial = model.values();
    Trajectory t = run(optimizer, model, comm.rank());
    std::lock_guard<std::mutex> lock(mutex);
    out[static_cast<std::size_t>(comm.rank())] = std::move(t);
  });
  return out;
}

TEST(DelayedUpdate, ZeroStagesOneAndTwoWalkTheImmediateWeightsOneStepLate) {
  for (int stage : {1, 2})
    for (int world : {1, 2}) {
      Values initial;
      const std::vector<Trajectory> now = run_zero(world, stage, false, &initial);
      const std::vector<Trajectory> late = run_zero(world, stage, true, nullptr);
      for (int rank = 0; rank < world; ++rank)
        expect_delayed(
            late[static_cast<std::size_t>(rank)], now[static_cast<std::size_t>(rank)], initial,
            "stage " + std::to_string(stage) + ", " + std::to_string(world) + " ranks, rank " + std::to_string(rank));
    }
}

TEST(DelayedUpdate, RefusesAPartialOffloadAndHostGradients) {
  LinearModel model;
  OffloadOptions partial = offload(true);
  partial.ratio = 0.5;
  EXPECT_THROW(Optimizer(model.parameters(), decaying(), partial), Error);
  OffloadOptions host = offload(true);
  host.gradients_on_host = true;
  EXPECT_THROW(Optimizer(model.parameters(), decaying(), host), Error);
}

}  // namespace
}  // namespace zt::train
