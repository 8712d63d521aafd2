// The server's one engine thread. HTTP threads submit requests and each reads its tokens
// from a queue of its own; the loop thread alone touches the engine: between steps it adds
// what was submitted (so every request joins the running batch) and drops what was
// cancelled (a client that went away frees its sequence at the next step), and it sleeps
// while there is nothing to do. Under --tp this is rank 0's loop: it sends each step's plan
// to the other ranks (step_plan.h), whose follow_engine_loop runs the same steps on their
// shards.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "distributed/communicator.h"
#include "infer/continuous_batch.h"
#include "serve/step_plan.h"
#include "serve/throughput_log.h"
#include "serve/token_delivery.h"

namespace zt::serve {

// Under --tp: the communicator of the ranks and how many of them share this rank's device.
struct LoopRanks {
  distributed::Communicator* comm = nullptr;  // null: one device, no other ranks
  int ranks_per_device = 1;
};

// What a rank other than 0 runs under --tp: rank 0's steps, plan by plan, on `shard` (whose
// partial sums go over ranks.comm), until rank 0's loop ends.
void follow_engine_loop(const models::CausalLM& shard, infer::EngineOptions options, std::int64_t max_request_tokens,
                        const LoopRanks& ranks);

// One request's side of the queue: the loop thread writes, one HTTP thread reads.
class TokenQueue {
 public:
  struct Update {
    std::vector<std::int64_t> tokens;  // new since the last update
    bool finished = false;             // no more will come
    std::string error;                 // set when the engine failed the request
  };
  // Blocks until there are new tokens or the request ended.
  Update next();

  void push(std::int64_t token);
  void finish(std::string error = "");

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  Update pending_;
};

class EngineLoop {
 public:
  // Starts the thread; `model` must outlive the loop. `max_request_tokens` sizes the block
  // tables and the cache (with options.cache_blocks, else for max_batch such requests,
  // capped by the device's free memory).
  // Under --tp every rank must construct its loop (rank 0) or follow it (the others).
  EngineLoop(const models::CausalLM& model, infer::EngineOptions options, std::int64_t max_request_tokens,
             const LoopRanks& ranks = {});
  // Cancels what is still running and joins the thread.
  ~EngineLoop();

  std::int64_t first_position() const { return first_position_; }
  std::int64_t max_request_tokens() const { return max_request_tokens_; }

  struct Submitted {
    std::size_t id;
    std::shared_ptr<TokenQueue> tokens;
  };
  Submitted submit(infer::GenerationRequest request);
  // Ends request `id` at the next step (its queue then finishes).
  void cancel(std::size_t id);

 private:
  void run(const models::CausalLM& model, const infer::EngineOptions& options, std::int64_t cache_blocks);
  void serve_steps(infer::ContinuousBatch& batch, StepBroadcast* broadcast);
  // One step of the batch, timed into `figures` (which logs a line every interval).
  void timed_step(infer::ContinuousBatch& batch, ThroughputLog& figures);
  std::shared_ptr<TokenQueue> queue_of(std::size_t id);
  // Finishes `id`'s queue (with `error` unless empty) and forgets it.
  void end(std::size_t id, const std::string& error);
  StepPlan take_inbox();
  void fail_all(infer::ContinuousBatch& batch, const std::string& error);

  std::int64_t max_request_tokens_;
  LoopRanks ranks_;
  std::int64_t first_position_ = 0;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool started_ = false;
  std::string start_error_;
  std::size_t next_id_ = 0;
  std::deque<std::pair<std::size_t, infer::GenerationRequest>> submitted_;
  std::vector<std::size_t> cancelled_;
  std::map<std::size_t, std::shared_ptr<TokenQueue>> queues_;  // every request not yet finished
  std::int64_t steps_ = 0;                                     // steps run so far
  std::set<std::int64_t> failing_steps_;  // those that fail on purpose (ZT_SERVE_FAIL_STEPS, for tests)
  // The engine thread's tokens and normal ends, delivered to the queues off that thread; its
  // failures end requests directly, after draining it.
  std::unique_ptr<TokenDelivery> delivery_;
  std::thread thread_;
};

}  // namespace zt::serve
