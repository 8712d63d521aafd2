#include "serve/token_delivery.h"

#include <exception>
#include <utility>

#include "runtime/log.h"

namespace zt::serve {

TokenDelivery::TokenDelivery(std::function<void(const Update&)> deliver)
    : deliver_(std::move(deliver)), thread_([this] { run(); }) {}

TokenDelivery::~TokenDelivery() {
  flush();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void TokenDelivery::flush() {
  if (posted_.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    handed_total_ += posted_.size();
    handed_.insert(handed_.end(), posted_.begin(), posted_.end());
  }
  posted_.clear();
  changed_.notify_all();
}

void TokenDelivery::drain() {
  flush();
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return delivered_total_ == handed_total_; });
}

void TokenDelivery::run() {
  std::vector<Update> batch;
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || !handed_.empty(); });
    if (handed_.empty()) return;  // stopping, and everything handed over is delivered
    batch.swap(handed_);
    lock.unlock();
    for (const Update& update : batch) {
      try {
        deliver_(update);
      } catch (const std::exception& e) {  // a queue out of memory: that request loses the update, the thread goes on
        ZT_ERROR("serve: delivering a token of request " << update.id << " failed: " << e.what());
      }
    }
    lock.lock();
    delivered_total_ += batch.size();
    batch.clear();
    changed_.notify_all();  // a drain() may wait for these
  }
}

}  // namespace zt::serve
