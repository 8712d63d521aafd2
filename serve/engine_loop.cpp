#include "serve/engine_loop.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <sstream>

#include "distributed/integer_collectives.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/log.h"

namespace zt::serve {

TokenQueue::Update TokenQueue::next() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return !pending_.tokens.empty() || pending_.finished; });
  Update update = std::move(pending_);
  pending_ = {};
  pending_.finished = update.finished;  // an ended request stays ended
  pending_.error = update.error;
  return update;
}

void TokenQueue::push(std::int64_t token) {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.tokens.push_back(token);
  changed_.notify_one();
}

void TokenQueue::finish(std::string error) {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.finished = true;
  pending_.error = std::move(error);
  changed_.notify_one();
}

namespace {

// While idle, rank 0 sends an empty plan this often: the other ranks wait for plans inside a
// collective, which fails after the communicator's timeout.
constexpr std::chrono::seconds kKeepAliveInterval{5};

// The cache: options.cache_blocks, else room for max_batch requests of the longest length,
// on a GPU no more than 90% of its free memory (under --tp, this rank's share of it, and then
// the least over the ranks, whose batches must admit the same sequences); never less than
// one longest request.
std::int64_t cache_blocks_for(const models::CausalLM& model, const infer::EngineOptions& options,
                              std::int64_t max_request_tokens, const LoopRanks& ranks) {
  const std::int64_t per_request =
      (infer::prefix_length_of(model) + max_request_tokens + options.block_size - 1) / options.block_size;
  infer::KvCachePlan plan = infer::plan_kv_cache(model, options, {});
  std::int64_t blocks = options.cache_blocks > 0 ? options.cache_blocks : per_request * options.max_batch;
  if (model.device().is_cuda()) {
    const auto free_bytes = static_cast<double>(device_memory_info(model.device().index).free);
    blocks = std::min(blocks, static_cast<std::int64_t>(free_bytes * 0.9 / ranks.ranks_per_device) / plan.block_bytes);
  }
  if (ranks.comm != nullptr) blocks = distributed::min_over_ranks(*ranks.comm, blocks, model.device());
  ZT_REQUIRE(blocks >= per_request, "the KV cache for one request of " + std::to_string(max_request_tokens) +
                                        " tokens does not fit in the free device memory: lower --max_model_len");
  return blocks;
}

// The all-reduces inside a tensor-parallel step wait on the host, which a CUDA graph cannot
// capture (as infer::TensorParallelEngine).
infer::EngineOptions for_ranks(infer::EngineOptions options, const LoopRanks& ranks) {
  if (ranks.comm != nullptr) options.cuda_graphs = false;
  return options;
}

// The tests' way to make a step fail as a device error would: ZT_SERVE_FAIL_STEPS="3,5"
// fails the 3rd and the 5th step the loop runs (counted from 1, over every request; one
// device only, not under --tp).
std::set<std::int64_t> failing_steps_from_environment() {
  std::set<std::int64_t> steps;
  const char* text = std::getenv("ZT_SERVE_FAIL_STEPS");
  if (text == nullptr) return steps;
  std::stringstream list(text);
  for (std::string item; std::getline(list, item, ',');) {
    try {
      steps.insert(std::stoll(item));
    } catch (const std::exception&) {
      zt::fail("ZT_SERVE_FAIL_STEPS: '" + item + "' is not a step number");
    }
  }
  return steps;
}

}  // namespace

void follow_engine_loop(const models::CausalLM& shard, infer::EngineOptions options, std::int64_t max_request_tokens,
                        const LoopRanks& ranks) {
  options = for_ranks(options, ranks);
  const std::int64_t blocks = cache_blocks_for(shard, options, max_request_tokens, ranks);
  infer::ContinuousBatch batch(
      shard, options, blocks, max_request_tokens,
      {.token = [](std::size_t, std::int64_t) {}, .finished = [](std::size_t, std::vector<std::int64_t>) {}});
  StepBroadcast broadcast(*ranks.comm, shard.device());
  while (std::optional<StepPlan> plan = broadcast.receive()) {
    apply_step_plan(std::move(*plan), batch, [](std::size_t, const std::string&) {});
    if (!batch.idle()) batch.step();
  }
}

EngineLoop::EngineLoop(const models::CausalLM& model, infer::EngineOptions options, std::int64_t max_request_tokens,
                       const LoopRanks& ranks)
    : max_request_tokens_(max_request_tokens), ranks_(ranks), failing_steps_(failing_steps_from_environment()) {
  options = for_ranks(options, ranks);
  const std::int64_t blocks = cache_blocks_for(model, options, max_request_tokens, ranks);
  ZT_INFO("serve: KV cache of " << blocks * options.block_size << " tokens, up to " << options.max_batch
                                << " requests at once");
  delivery_ = std::make_unique<TokenDelivery>([this](const TokenDelivery::Update& update) {
    if (update.finished)
      end(update.id, "");
    else if (std::shared_ptr<TokenQueue> queue = queue_of(update.id))
      queue->push(update.token);
  });
  thread_ = std::thread([this, &model, options, blocks] { run(model, options, blocks); });
  std::unique_lock<std::mutex> lock(mutex_);
  wake_.wait(lock, [&] { return started_; });
  if (!start_error_.empty()) {
    lock.unlock();
    thread_.join();
    fail(start_error_);
  }
}

EngineLoop::~EngineLoop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

EngineLoop::Submitted EngineLoop::submit(infer::GenerationRequest request) {
  auto queue = std::make_shared<TokenQueue>();
  std::lock_guard<std::mutex> lock(mutex_);
  const std::size_t id = next_id_++;
  queues_[id] = queue;
  submitted_.emplace_back(id, std::move(request));
  wake_.notify_all();
  return {id, queue};
}

void EngineLoop::cancel(std::size_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  cancelled_.push_back(id);
  wake_.notify_all();
}

// The batch lives on this thread: a device's work stays on the thread that made it.
void EngineLoop::run(const models::CausalLM& model, const infer::EngineOptions& options, std::int64_t cache_blocks) {
  std::optional<DeviceGuard> on_device;
  std::unique_ptr<infer::ContinuousBatch> batch;
  infer::BatchEvents events{
      .token = [this](std::size_t id, std::int64_t token) { delivery_->post({.id = id, .token = token}); },
      .finished = [this](std::size_t id, std::vector<std::int64_t>) { delivery_->post({.id = id, .finished = true}); }};
  try {
    if (model.device().is_cuda()) on_device.emplace(model.device().index);
    batch = std::make_unique<infer::ContinuousBatch>(model, options, cache_blocks, max_request_tokens_, events);
  } catch (const std::exception& e) {
    start_error_ = e.what();
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    first_position_ = batch ? batch->first_position() : 0;
    started_ = true;
  }
  wake_.notify_all();
  std::optional<StepBroadcast> broadcast;
  if (ranks_.comm != nullptr) broadcast.emplace(*ranks_.comm, model.device());
  if (batch) serve_steps(*batch, broadcast ? &*broadcast : nullptr);
  if (broadcast) broadcast->send_end();
}

void EngineLoop::serve_steps(infer::ContinuousBatch& batch, StepBroadcast* broadcast) {
  ThroughputLog figures;
  while (true) {
    if (batch.idle())
      if (std::optional<std::string> line = figures.flush(ThroughputLog::Clock::now())) ZT_INFO(*line);
    {
      std::unique_lock<std::mutex> lock(mutex_);
      auto busy = [&] { return stopping_ || !submitted_.empty() || !cancelled_.empty() || !batch.idle(); };
      if (broadcast == nullptr)
        wake_.wait(lock, busy);
      else
        wake_.wait_for(lock, kKeepAliveInterval, busy);
      if (stopping_) break;
    }
    StepPlan plan = take_inbox();
    if (broadcast != nullptr) broadcast->send(plan);
    // A failure here fails the requests of the batch it hit (their answers say why) and the
    // loop goes on with the ones that come next.
    try {
      apply_step_plan(std::move(plan), batch, [this](std::size_t id, const std::string& why) { end(id, why); });
      if (!batch.idle()) {
        ++steps_;
        if (broadcast == nullptr && failing_steps_.count(steps_) != 0)
          zt::fail("step " + std::to_string(steps_) + " failed on purpose (ZT_SERVE_FAIL_STEPS)");
        timed_step(batch, figures);
      }
    } catch (const std::exception& e) {
      ZT_ERROR("serve: a generation step failed: " << e.what());
      fail_all(batch, e.what());
    }
    delivery_->flush();
  }
  fail_all(batch, "the server is shutting down");
}

void EngineLoop::timed_step(infer::ContinuousBatch& batch, ThroughputLog& figures) {
  const auto start = ThroughputLog::Clock::now();
  const infer::ContinuousBatch::StepCounts counts = batch.step();
  const auto done = ThroughputLog::Clock::now();
  const StepFigures step{.took = done - start,
                         .prompt_tokens = counts.prompt_tokens,
                         .generated_tokens = counts.sequences,
                         .running = batch.running(),
                         .waiting = batch.waiting()};
  if (std::optional<std::string> line = figures.add(step, done)) ZT_INFO(*line);
}

std::shared_ptr<TokenQueue> EngineLoop::queue_of(std::size_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = queues_.find(id);
  return found == queues_.end() ? nullptr : found->second;
}

void EngineLoop::end(std::size_t id, const std::string& error) {
  std::shared_ptr<TokenQueue> queue;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto found = queues_.find(id);
    if (found == queues_.end()) return;
    queue = found->second;
    queues_.erase(found);
  }
  queue->finish(error);
  wake_.notify_all();
}

StepPlan EngineLoop::take_inbox() {
  StepPlan plan;
  std::lock_guard<std::mutex> lock(mutex_);
  plan.added.assign(std::make_move_iterator(submitted_.begin()), std::make_move_iterator(submitted_.end()));
  submitted_.clear();
  plan.cancelled.swap(cancelled_);
  return plan;
}

// Every unfinished request ends with `error` (its queue first, so the batch's own end of it
// finds nothing left to report), and the batch is emptied. Requests submitted but not yet
// taken into the batch end too, and are dropped: nobody would read their tokens.
void EngineLoop::fail_all(infer::ContinuousBatch& batch, const std::string& error) {
  delivery_->drain();  // the tokens the failed step's requests got before it go out first
  std::vector<std::size_t> ids;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [id, queue] : queues_) ids.push_back(id);
    submitted_.clear();
  }
  for (std::size_t id : ids) end(id, error);
  try {
    batch.cancel_all();
  } catch (const std::exception& e) {
    ZT_ERROR("serve: emptying the batch failed: " << e.what());
  }
}

}  // namespace zt::serve
