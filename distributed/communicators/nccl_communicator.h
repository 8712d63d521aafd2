// Collectives across processes and GPUs through NCCL. The communicator is created from an
// ncclUniqueId that rank 0 publishes over the TCP rendezvous; NCCL runs non-blocking and
// every wait is bounded: initialisation or a collective that does not finish within the
// timeout aborts the communicator, and the rank fails with a message naming itself, the
// collective, its size and the elapsed time. Collectives run on a dedicated stream, ordered
// after the caller's stream with events and before its later work.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <memory>

#include "distributed/communicator.h"
#include "distributed/launch/rendezvous.h"

namespace zt::distributed {

class NcclCommunicator : public Communicator {
 public:
  // Joins the job: rendezvous (rank 0 serves, the others join), then ncclCommInitRank on the
  // current CUDA device. `timeout` bounds the rendezvous, the initialisation and every
  // collective (HF's --ddp_timeout).
  NcclCommunicator(int rank, const RendezvousConfig& rendezvous, std::chrono::milliseconds timeout);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  void all_reduce(const Tensor& buffer, ReduceOp op) override;
  void reduce_scatter(const Tensor& input, const Tensor& output) override;
  void all_gather(const Tensor& input, const Tensor& output) override;
  // The collective is queued on this communicator's stream behind the caller's work so far;
  // the caller's stream carries on computing and waits for it only in wait().
  std::unique_ptr<PendingCollective> start_all_gather(const Tensor& input, const Tensor& output) override;
  std::unique_ptr<PendingCollective> start_reduce_scatter(const Tensor& input, const Tensor& output) override;
  void broadcast(const Tensor& buffer, int root) override;
  void barrier() override;

  cudaStream_t stream() const { return stream_; }

 private:
  class Pending;
  using Clock = std::chrono::steady_clock;
  // run() = launch() then finish(): start_all_gather and start_reduce_scatter do the first half
  // now, the second in their handle's wait().
  template <typename Launch>
  void run(const std::string& what, Launch&& launch);
  template <typename Launch>
  Clock::time_point launch(const std::string& what, Launch&& launch, cudaEvent_t done);
  void finish(const std::string& what, Clock::time_point start, cudaEvent_t done);
  void wait_for_nccl(const std::string& what, Clock::time_point start, cudaEvent_t done = nullptr);

  int rank_ = 0;
  int world_size_ = 1;
  std::chrono::milliseconds timeout_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_ = nullptr, done_ = nullptr;
  bool aborted_ = false;
};

ncclDataType_t nccl_dtype(DType dtype);

}  // namespace zt::distributed
