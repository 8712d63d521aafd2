// N ranks as threads of one process, on CPU tensors or sharing one GPU. Every collective is
// a meeting: each rank posts its tensors, waits until all have, computes its own part of
// the result reading the others' inputs (summing in rank order, so every rank gets the same
// bits), and waits again so no input is released while another rank still reads it. One
// rank meets nobody: its collectives are copies where the tensors are (no-ops in place), so
// the one-process ZeRO-3 engine of parameter offload moves no data through the host.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "distributed/communicator.h"

namespace zt::distributed {

// What the ranks of one in-process group share.
class InProcessGroup {
 public:
  InProcessGroup(int world_size, std::chrono::milliseconds timeout);

  int world_size() const { return world_size_; }

  // One rank's part of a collective: posts (what, input, output), meets the others, runs
  // `compute` once everyone's inputs are posted, meets again. A rank whose collective
  // differs from the others', or a meeting that times out, fails every rank.
  void meet(int rank, const std::string& what, const Tensor& input, const Tensor& output,
            const std::function<void(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs)>& compute);

  // Fails every pending and later meeting with `reason` (a rank died outside a collective).
  void abort(const std::string& reason);

 private:
  void wait_for_all(std::unique_lock<std::mutex>& lock, int rank, const std::string& what);

  const int world_size_;
  const std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::int64_t generation_ = 0;
  int arrived_ = 0;
  std::vector<std::string> posted_what_;
  std::vector<Tensor> inputs_, outputs_;
  std::vector<Tensor> snapshot_inputs_, snapshot_outputs_;  // of the meeting just completed
  std::string failure_;                                     // set once: every later meeting fails with it
};

class InProcessCommunicator : public Communicator {
 public:
  InProcessCommunicator(std::shared_ptr<InProcessGroup> group, int rank);

  int rank() const override { return rank_; }
  int world_size() const override { return group_->world_size(); }
  void all_reduce(const Tensor& buffer, ReduceOp op) override;
  void reduce_scatter(const Tensor& input, const Tensor& output) override;
  void all_gather(const Tensor& input, const Tensor& output) override;
  void broadcast(const Tensor& buffer, int root) override;
  void barrier() override;

 private:
  std::shared_ptr<InProcessGroup> group_;
  int rank_;
};

// Runs fn(communicator) on `world_size` threads, each with its rank set for messages and
// logs; after every thread has ended, rethrows the error of the rank that failed first.
void run_inprocess_ranks(int world_size, std::chrono::milliseconds timeout,
                         const std::function<void(Communicator& communicator)>& fn);

}  // namespace zt::distributed
