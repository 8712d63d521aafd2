// A fixed set of threads that run one function on every thread and wait for all of them:
// the CPU Adam splits each step's elements across them. The calling thread is worker 0, so
// a pool of one thread starts none.
#pragma once

#include "runtime/non_copyable.h"

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace zt::ops {

class WorkerPool : NonCopyable {
 public:
  explicit WorkerPool(int threads);
  ~WorkerPool();

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  // Calls task(i) for every i in [0, size()), each on its own thread, and returns when all
  // have returned. `task` must not throw.
  void run(const std::function<void(int)>& task);

 private:
  void work(int index);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_, finished_;
  const std::function<void(int)>* task_ = nullptr;
  std::uint64_t generation_ = 0;  // counts run() calls; a worker starts when it changes
  int running_ = 0;
  bool stopping_ = false;
};

}  // namespace zt::ops
