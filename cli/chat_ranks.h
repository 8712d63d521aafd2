// What a tensor-parallel `zerotune chat` needs beyond one device: rank 0 alone talks with the
// terminal and tells the other ranks what to generate. Between turns the other ranks wait in
// a broadcast; so that waiting for a slow typist never reaches the collectives' timeout, rank
// 0 reads the terminal on a thread of its own and sends a keep-alive while nobody types.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "distributed/communicator.h"

namespace zt::cli {

// Rank 0 sends each turn's prompt (token ids), a keep-alive, or the end of the chat; the
// other ranks receive them in that order. /reset needs no message: the history is rank 0's
// (it sends the whole prompt of every turn). Ctrl-C reaches the others through the engine's
// cancellation (infer/tensor_parallel_engine.h).
class TurnBroadcast {
 public:
  TurnBroadcast(distributed::Communicator& comm, Device device) : comm_(comm), device_(device) {}

  void send_turn(const std::vector<std::int64_t>& prompt);
  void send_keep_alive();
  void send_end();

  // The next turn's prompt, past any keep-alives; nullopt when the chat has ended.
  std::optional<std::vector<std::int64_t>> receive();

 private:
  std::int64_t broadcast_header(std::int64_t header);

  distributed::Communicator& comm_;
  Device device_;
};

// Lines of stdin, read ahead by a thread of their own so the reader can do other work while
// it waits.
class StdinLines {
 public:
  StdinLines();

  // The next line, or nullopt at the end of input; calls `idle` every `interval` it waits.
  std::optional<std::string> next(std::chrono::milliseconds interval, const std::function<void()>& idle);

 private:
  struct Queue;
  std::shared_ptr<Queue> queue_;  // shared with the reading thread, which may outlive this
};

}  // namespace zt::cli
