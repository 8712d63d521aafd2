#include "distributed/communicators/inprocess_communicator.h"

#include "runtime/check.h"
#include "runtime/error.h"
#include "runtime/profile/step_profiler.h"
#include "runtime/streams/current_stream.h"

namespace zt::distributed {

InProcessGroup::InProcessGroup(int world_size, std::chrono::milliseconds timeout)
    : world_size_(world_size), timeout_(timeout), posted_what_(world_size), inputs_(world_size), outputs_(world_size) {
  ZT_REQUIRE(world_size >= 1, "in-process group: world size must be >= 1, got " + std::to_string(world_size));
}

void InProcessGroup::wait_for_all(std::unique_lock<std::mutex>& lock, int rank, const std::string& what) {
  const std::int64_t my_generation = generation_;
  if (++arrived_ == world_size_) {
    // The last to arrive checks the meeting and snapshots it before anyone can post again.
    for (int other = 1; other < world_size_ && failure_.empty(); ++other)
      if (posted_what_[other] != posted_what_[0])
        failure_ = "rank 0 runs " + posted_what_[0] + " while rank " + std::to_string(other) + " runs " +
                   posted_what_[other] + ": every rank must issue the same collectives in the same order";
    snapshot_inputs_ = inputs_;
    snapshot_outputs_ = outputs_;
    arrived_ = 0;
    ++generation_;
    changed_.notify_all();
  } else {
    const auto start = std::chrono::steady_clock::now();
    const bool done =
        changed_.wait_for(lock, timeout_, [&] { return generation_ != my_generation || !failure_.empty(); });
    if (!done && failure_.empty()) {
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      failure_ = "rank " + std::to_string(rank) + ": " + what + " did not complete within " + std::to_string(seconds) +
                 " s: " + std::to_string(world_size_ - arrived_) +
                 " rank(s) never joined it (crashed, stuck, or running a different collective). Check the other "
                 "ranks' errors; for NCCL runs set NCCL_DEBUG=INFO; raise --ddp_timeout for slow steps";
      changed_.notify_all();
    }
  }
  if (!failure_.empty()) fail(failure_);
}

void InProcessGroup::meet(int rank, const std::string& what, const Tensor& input, const Tensor& output,
                          const std::function<void(const std::vector<Tensor>&, const std::vector<Tensor>&)>& compute) {
  ProfileRegion region(OpFamily::kCollective);
  // The peers read this rank's input from their own threads, on their own streams: what this
  // rank queued to produce it (a shard's copy on a copy stream, say) must be done first.
  if ((input.defined() && input.device().is_cuda()) || (output.defined() && output.device().is_cuda()))
    ZT_CUDA_CHECK(cudaStreamSynchronize(current_stream()));
  std::unique_lock<std::mutex> lock(mutex_);
  if (!failure_.empty()) fail(failure_);
  posted_what_[rank] = what;
  inputs_[rank] = input;
  outputs_[rank] = output;
  wait_for_all(lock, rank, what);
  std::vector<Tensor> inputs = snapshot_inputs_, outputs = snapshot_outputs_;
  lock.unlock();
  compute(inputs, outputs);  // each rank writes only its own output
  lock.lock();
  wait_for_all(lock, rank, what);
}

void InProcessGroup::abort(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (failure_.empty()) failure_ = reason;
  changed_.notify_all();
}

}  // namespace zt::distributed
