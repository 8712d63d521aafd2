// The collectives ZeRO and tensor parallelism are built from, on whole contiguous tensors of
// one dtype: all-reduce, reduce-scatter, all-gather, broadcast, barrier. Implementations:
// NCCL across processes and GPUs, and in-process ranks (threads of one process) for tests and
// for watching ZeRO on one machine. A collective that does not complete within the timeout
// fails on every rank with a message naming the rank, the collective and its size; no rank
// hangs.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "tensor/tensor.h"

namespace zt::distributed {

enum class ReduceOp { kSum, kMax };

// A collective that has been started and may still be running (ZeRO-3's prefetch): its
// output may be read only after wait(), which also fails, as a collective does, when it
// stalled or a peer died.
class PendingCollective {
 public:
  virtual ~PendingCollective() = default;
  // On the CPU: returns once the output is written. Under NCCL: orders the caller's current
  // stream after the collective (the host waits only as long as the watchdog must look).
  virtual void wait() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;

  // buffer = op over ranks of buffer, in place.
  virtual void all_reduce(const Tensor& buffer, ReduceOp op = ReduceOp::kSum) = 0;
  // output (n elements) = sum over ranks of input[rank * n : (rank + 1) * n].
  virtual void reduce_scatter(const Tensor& input, const Tensor& output) = 0;
  // output (world_size * n elements) = the ranks' inputs (n elements each), in rank order.
  virtual void all_gather(const Tensor& input, const Tensor& output) = 0;
  // all_gather and reduce_scatter, started now and finished by the handle's wait(); the input
  // must not change and the output not be read before then. NCCL runs them on its own stream
  // while the caller's stream computes (ZeRO-3's prefetch, overlap_comm's gradient buckets);
  // the default (in-process ranks, Gloo) runs the collective at once, so there it simply
  // happens earlier in order.
  virtual std::unique_ptr<PendingCollective> start_all_gather(const Tensor& input, const Tensor& output);
  virtual std::unique_ptr<PendingCollective> start_reduce_scatter(const Tensor& input, const Tensor& output);
  virtual void broadcast(const Tensor& buffer, int root) = 0;
  virtual void barrier() = 0;
};

// "all_reduce of 1048576 bfloat16 elements (2.0 MiB)": how collectives are named in errors.
std::string describe_collective(const char* name, const Tensor& tensor);

// Throws unless `whole` (reduce_scatter's input, all_gather's output) holds world_size times
// the elements of `part` (the other one) and, with same_dtype, has its dtype.
void require_world_multiple(const char* op, const Tensor& whole, const char* whole_role, const Tensor& part,
                            const char* part_role, int world_size, bool same_dtype);

}  // namespace zt::distributed
