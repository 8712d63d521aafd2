// A Communicator that hands every collective to another one and records it, for watching
// ZeRO's partitions move (--zero_trace, docs/ZERO.md). Each collective becomes:
//
//   - one JSON line in this rank's trace file (every rank writes its own, flushed per line):
//       {"rank":1,"op":"reduce_scatter","label":"stage 2 reduce-scatter gradients, bucket 0",
//        "dtype":"float32","elements":8192,"bytes":32768,"start_us":51234,"host_us":87}
//   - one info line on the log ("[zerotune rank 1/2 I] trace ..."), which like every info
//     line prints on rank 0 only unless ZT_LOG_ALL_RANKS=1.
//
// label: the innermost CollectiveLabel of the calling thread (distributed/communicators/collective_label.h),
// empty for a collective nobody labelled. elements and bytes: of the tensor this rank puts in
// (the whole buffer of a reduce-scatter, the chunk of an all-gather, the buffer of an
// all-reduce or a broadcast; 0 for a barrier), as describe_collective names it in errors.
// start_us: when the call began, counted from the run's start. host_us: how long the call
// took on the calling thread. On the CPU (in-process ranks, Gloo) that is the whole
// collective, waiting for the other ranks included; under NCCL the collective is only queued
// on the GPU stream when the call returns, so host_us is the cost of queueing it, not of the
// transfer.
#pragma once

#include <chrono>
#include <fstream>
#include <functional>
#include <string>

#include "distributed/communicator.h"

namespace zt::distributed {

class TracingCommunicator : public Communicator {
 public:
  // Writes `trace_path` anew; `inner` must outlive this communicator.
  TracingCommunicator(Communicator& inner, const std::string& trace_path,
                      std::chrono::steady_clock::time_point run_start);

  int rank() const override { return inner_.rank(); }
  int world_size() const override { return inner_.world_size(); }
  void all_reduce(const Tensor& buffer, ReduceOp op) override;
  void reduce_scatter(const Tensor& input, const Tensor& output) override;
  void all_gather(const Tensor& input, const Tensor& output) override;
  // Traced as an all_gather when it starts; host_us is the cost of starting it.
  std::unique_ptr<PendingCollective> start_all_gather(const Tensor& input, const Tensor& output) override;
  // Traced as a reduce_scatter when it starts, likewise.
  std::unique_ptr<PendingCollective> start_reduce_scatter(const Tensor& input, const Tensor& output) override;
  void broadcast(const Tensor& buffer, int root) override;
  void barrier() override;

 private:
  // Runs `collective` and records it as `op` on `tensor` (undefined for a barrier).
  void traced(const char* op, const Tensor& tensor, const std::function<void()>& collective);

  Communicator& inner_;
  std::string trace_path_;
  std::ofstream trace_;
  std::chrono::steady_clock::time_point run_start_;
};

// "zero_trace_rank1.jsonl": the trace file of `rank` in the run's output_dir.
std::string trace_file_name(int rank);

}  // namespace zt::distributed
