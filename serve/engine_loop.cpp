#include "serve/engine_loop.h"

#include <algorithm>

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

// The cache: options.cache_blocks, else room for max_batch requests of the longest length,
// on a GPU no more than 90% of its free memory; never less than one longest request.
std::int64_t cache_blocks_for(const models::CausalLM& model, const infer::EngineOptions& options,
                              std::int64_t max_request_tokens) {
  const std::int64_t per_request =
      (infer::prefix_length_of(model) + max_request_tokens + options.block_size - 1) / options.block_size;
  infer::KvCachePlan plan = infer::plan_kv_cache(model, options, {});
  std::int64_t blocks = options.cache_blocks > 0 ? options.cache_blocks : per_request * options.max_batch;
  if (model.device().is_cuda()) {
    const auto free_bytes = static_cast<double>(device_memory_info(model.device().index).free);
    blocks = std::min(blocks, static_cast<std::int64_t>(free_bytes * 0.9) / plan.block_bytes);
  }
  ZT_REQUIRE(blocks >= per_request, "the KV cache for one request of " + std::to_string(max_request_tokens) +
                                        " tokens does not fit in the free device memory: lower --max_model_len");
  return blocks;
}

}  // namespace

EngineLoop::EngineLoop(const models::CausalLM& model, const infer::EngineOptions& options,
                       std::int64_t max_request_tokens)
    : max_request_tokens_(max_request_tokens) {
  const std::int64_t blocks = cache_blocks_for(model, options, max_request_tokens);
  ZT_INFO("serve: KV cache of " << blocks * options.block_size << " tokens, up to " << options.max_batch
                                << " requests at once");
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
  infer::BatchEvents events{.token =
                                [this](std::size_t id, std::int64_t token) {
                                  if (std::shared_ptr<TokenQueue> queue = queue_of(id)) queue->push(token);
                                },
                            .finished = [this](std::size_t id, std::vector<std::int64_t>) { end(id, ""); }};
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
  if (!batch) return;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !submitted_.empty() || !cancelled_.empty() || !batch->idle(); });
      if (stopping_) break;
    }
    take_inbox(*batch);
    try {
      if (!batch->idle()) batch->step();
    } catch (const std::exception& e) {
      ZT_ERROR("serve: a generation step failed: " << e.what());
      fail_all(*batch, e.what());
    }
  }
  fail_all(*batch, "the server is shutting down");
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

void EngineLoop::take_inbox(infer::ContinuousBatch& batch) {
  std::deque<std::pair<std::size_t, infer::GenerationRequest>> submitted;
  std::vector<std::size_t> cancelled;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    submitted.swap(submitted_);
    cancelled.swap(cancelled_);
  }
  for (auto& [id, request] : submitted) {
    try {
      batch.add(id, std::move(request));
    } catch (const std::exception& e) {
      end(id, e.what());
    }
  }
  for (std::size_t id : cancelled) batch.cancel(id);
}

// Every unfinished request ends with `error` (its queue first, so the batch's own end of it
// finds nothing left to report), and the batch is emptied.
void EngineLoop::fail_all(infer::ContinuousBatch& batch, const std::string& error) {
  std::vector<std::size_t> ids;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [id, queue] : queues_) ids.push_back(id);
  }
  for (std::size_t id : ids) end(id, error);
  try {
    batch.cancel_all();
  } catch (const std::exception& e) {
    ZT_ERROR("serve: emptying the batch failed: " << e.what());
  }
}

}  // namespace zt::serve
