// Each step's tokens handed to the requests' queues by a thread of their own. Waking an HTTP
// thread that waits on its queue costs the waker a system call (microseconds); at 64 streams
// that was 64 of them between two steps on the engine thread, and the GPU waited for them. The
// engine thread now posts a step's updates (an append each) and wakes this thread once; it
// delivers them, in the order posted, while the GPU runs the next step.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace zt::serve {

class TokenDelivery {
 public:
  struct Update {
    std::size_t id = 0;
    std::int64_t token = 0;  // unused when `finished`
    bool finished = false;   // the request's last update: it ended normally
  };
  explicit TokenDelivery(std::function<void(const Update&)> deliver);
  // Delivers what was posted, then joins the thread.
  ~TokenDelivery();
  TokenDelivery(const TokenDelivery&) = delete;
  TokenDelivery& operator=(const TokenDelivery&) = delete;

  // Kept until the next flush(); one thread posts and flushes.
  void post(const Update& update) { posted_.push_back(update); }
  // Hands what was posted to the delivering thread and wakes it.
  void flush();
  // flush(), then waits until everything posted has been delivered.
  void drain();

 private:
  void run();

  std::function<void(const Update&)> deliver_;
  std::vector<Update> posted_;  // the posting thread's
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Update> handed_;
  std::size_t handed_total_ = 0, delivered_total_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace zt::serve
