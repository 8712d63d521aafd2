#include "cli/chat_ranks.h"

#include <condition_variable>
#include <deque>
#include <iostream>
#include <mutex>
#include <thread>

#include "distributed/integer_collectives.h"

namespace zt::cli {
namespace {

// The header of each message: a prompt's length (> 0), or one of these.
constexpr std::int64_t kKeepAlive = 0;
constexpr std::int64_t kEnd = -1;

}  // namespace

std::int64_t TurnBroadcast::broadcast_header(std::int64_t header) {
  return distributed::broadcast_integer(comm_, header, 0, device_);
}

void TurnBroadcast::send_turn(const std::vector<std::int64_t>& prompt) {
  broadcast_header(static_cast<std::int64_t>(prompt.size()));
  distributed::broadcast_integers(comm_, prompt, 0, device_);
}

void TurnBroadcast::send_keep_alive() { broadcast_header(kKeepAlive); }

void TurnBroadcast::send_end() { broadcast_header(kEnd); }

std::optional<std::vector<std::int64_t>> TurnBroadcast::receive() {
  std::int64_t header = broadcast_header(kKeepAlive);  // what this rank passes is replaced by rank 0's
  while (header == kKeepAlive) header = broadcast_header(kKeepAlive);
  if (header == kEnd) return std::nullopt;
  return distributed::broadcast_integers(comm_, std::vector<std::int64_t>(static_cast<std::size_t>(header)), 0,
                                         device_);
}

struct StdinLines::Queue {
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::string> lines;
  bool ended = false;
};

StdinLines::StdinLines() : queue_(std::make_shared<Queue>()) {
  // Detached: at the end of the chat it may still be blocked in a read nobody will answer.
  std::thread([queue = queue_] {
    std::string line;
    while (std::getline(std::cin, line)) {
      std::lock_guard<std::mutex> lock(queue->mutex);
      queue->lines.push_back(line);
      queue->changed.notify_all();
    }
    std::lock_guard<std::mutex> lock(queue->mutex);
    queue->ended = true;
    queue->changed.notify_all();
  }).detach();
}

std::optional<std::string> StdinLines::next(std::chrono::milliseconds interval, const std::function<void()>& idle) {
  std::unique_lock<std::mutex> lock(queue_->mutex);
  while (queue_->lines.empty() && !queue_->ended) {
    if (queue_->changed.wait_for(lock, interval) == std::cv_status::timeout) {
      lock.unlock();
      idle();
      lock.lock();
    }
  }
  if (queue_->lines.empty()) return std::nullopt;
  std::string line = std::move(queue_->lines.front());
  queue_->lines.pop_front();
  return line;
}

}  // namespace zt::cli
