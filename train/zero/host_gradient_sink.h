// Where reduced gradient chunks go when the rank's fp32 gradient partition is in host memory
// (optimizer offload under ZeRO, as DeepSpeed keeps it): each chunk is added to its part of
// the partition by the rank's CPU threads. On a GPU the chunk is copied on a stream of its
// own into a page-locked slot and the addition runs on a thread of its own, so both happen
// while backward goes on; finish() waits for what is still in flight. On the CPU the chunk is
// added at once. Every addition is the float32 sum the device would make, element by element.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "runtime/non_copyable.h"
#include "runtime/streams/stream.h"
#include "tensor/tensor.h"

namespace zt::ops {
class WorkerPool;
}

namespace zt::train {

// What the additions cost: their own time on the host, and how long the caller waited for
// them (finish(), or a full set of slots): the rest ran behind backward.
struct HostGradientStats {
  std::int64_t chunks = 0;
  std::int64_t bytes = 0;  // copied to the host
  double add_seconds = 0.0;
  double waited_seconds = 0.0;
  double hidden() const;  // the share of add_seconds the caller did not wait for
};

class HostGradientSink : NonCopyable {
 public:
  explicit HostGradientSink(int threads);
  ~HostGradientSink();

  // target (float32, host) += chunk (any float dtype, its numel, on the host or a GPU). A
  // device chunk must stay unchanged until finish(); the sink holds a reference to it.
  void add(const Tensor& target, const Tensor& chunk);
  // Every addition queued so far is done, and the device chunks are released.
  void finish();
  const HostGradientStats& stats() const { return stats_; }

 private:
  struct Job;
  void add_on_host(const Tensor& target, const Tensor& chunk);
  void work();
  void wait_for_slots(std::size_t most);

  std::unique_ptr<ops::WorkerPool> adders_;
  HostGradientStats stats_;
  // GPU runs only:
  std::optional<Stream> to_host_;
  std::vector<Tensor> free_slots_;  // page-locked landing places, two at most
  std::deque<std::unique_ptr<Job>> queued_, done_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace zt::train
