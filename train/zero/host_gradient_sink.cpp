#include "train/zero/host_gradient_sink.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "ops/elementwise/accumulate.h"
#include "ops/worker_pool.h"
#include "runtime/profile/step_profiler.h"
#include "runtime/streams/current_stream.h"

namespace zt::train {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Page-locked slots for device chunks in flight: one being added while the next lands.
constexpr std::size_t kSlots = 2;

}  // namespace

double HostGradientStats::hidden() const {
  if (add_seconds <= 0.0) return 0.0;
  return std::clamp(1.0 - waited_seconds / add_seconds, 0.0, 1.0);
}

// A device chunk on its way: copied into `slot` on the copy stream (`landed` marks the end),
// then added by the worker thread. The chunk is kept until the caller's thread releases it.
struct HostGradientSink::Job {
  Tensor target, chunk, slot;
  Event landed;
};

HostGradientSink::HostGradientSink(int threads) : adders_(std::make_unique<ops::WorkerPool>(threads)) {}

HostGradientSink::~HostGradientSink() {
  if (!worker_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  worker_.join();
}

void HostGradientSink::add_on_host(const Tensor& target, const Tensor& chunk) {
  const auto start = std::chrono::steady_clock::now();
  const std::int64_t n = chunk.numel(), parts = adders_->size();
  adders_->run([&](int part) {
    const std::int64_t begin = n * part / parts, end = n * (part + 1) / parts;
    if (begin < end) ops::accumulate_(target.narrow(0, begin, end - begin), chunk.narrow(0, begin, end - begin));
  });
  stats_.add_seconds += seconds_since(start);
}

void HostGradientSink::add(const Tensor& target, const Tensor& chunk) {
  ++stats_.chunks;
  if (!chunk.device().is_cuda()) {  // added at once: the caller waits for all of it
    ProfileRegion waiting(OpFamily::kOffloadWait);
    const auto start = std::chrono::steady_clock::now();
    add_on_host(target, chunk);
    stats_.waited_seconds += seconds_since(start);
    return;
  }
  if (!to_host_) {
    to_host_ = Stream::create();
    worker_ = std::thread([this] { work(); });
  }
  wait_for_slots(1);
  auto job = std::make_unique<Job>();
  job->target = target;
  job->chunk = chunk;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job->slot = std::move(free_slots_.back());
    free_slots_.pop_back();
  }
  if (!job->slot.defined() || job->slot.numel() < chunk.numel() || job->slot.dtype() != chunk.dtype())
    job->slot = Tensor::empty_pinned({chunk.numel()}, chunk.dtype());
  // The chunk is complete once the current stream reaches this point (its reduction is there).
  Event reduced;
  reduced.record(current_stream());
  reduced.wait_on(to_host_->get());
  job->slot.narrow(0, 0, chunk.numel()).copy_from_async(chunk, to_host_->get());
  job->landed.record(to_host_->get());
  stats_.bytes += static_cast<std::int64_t>(chunk.nbytes());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queued_.push_back(std::move(job));
  }
  changed_.notify_all();
}

// The worker: waits for each job's copy, adds it, and hands the job back with its slot.
void HostGradientSink::work() {
  for (;;) {
    Job* job = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [this] { return stopping_ || !queued_.empty(); });
      if (queued_.empty()) return;
      job = queued_.front().get();
    }
    job->landed.synchronize();
    add_on_host(job->target, job->slot.narrow(0, 0, job->chunk.numel()));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_.push_back(std::move(queued_.front()));
      queued_.pop_front();
    }
    changed_.notify_all();
  }
}

// Blocks until at most `most` jobs are in flight and a slot is free (allocating the slots on
// first use), then releases the finished jobs' device chunks on this, the caller's, thread.
void HostGradientSink::wait_for_slots(std::size_t most) {
  ProfileRegion waiting(OpFamily::kOffloadWait);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::unique_ptr<Job>> finished;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (free_slots_.empty() && queued_.empty() && done_.empty())
      for (std::size_t i = 0; i < kSlots; ++i) free_slots_.emplace_back();
    changed_.wait(lock, [&] { return queued_.size() <= most && (most == 0 || free_slots_.size() + done_.size() > 0); });
    for (std::unique_ptr<Job>& job : done_) {
      free_slots_.push_back(std::move(job->slot));
      finished.push_back(std::move(job));
    }
    done_.clear();
  }
  stats_.waited_seconds += seconds_since(start);
}

void HostGradientSink::finish() {
  if (to_host_) wait_for_slots(0);
}

}  // namespace zt::train
