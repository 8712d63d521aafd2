#include "ops/worker_pool.h"

#include "runtime/error.h"

namespace zt::ops {

WorkerPool::WorkerPool(int threads) {
  ZT_REQUIRE(threads >= 1, "a worker pool needs at least one thread, got " + std::to_string(threads));
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { work(i); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  start_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void WorkerPool::run(const std::function<void(int)>& task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    task_ = &task;
    running_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  start_.notify_all();
  task(0);
  std::unique_lock<std::mutex> lock(mutex_);
  finished_.wait(lock, [this] { return running_ == 0; });
}

void WorkerPool::work(int index) {
  std::uint64_t seen = 0;
  while (true) {
    std::unique_lock<std::mutex> lock(mutex_);
    start_.wait(lock, [&] { return stopping_ || generation_ != seen; });
    if (stopping_) return;
    seen = generation_;
    const std::function<void(int)>& task = *task_;
    lock.unlock();
    task(index);
    lock.lock();
    if (--running_ == 0) finished_.notify_one();
  }
}

}  // namespace zt::ops
