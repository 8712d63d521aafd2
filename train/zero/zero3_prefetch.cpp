// Zero3Partitioner's prefetching: read after the gather and release of
// train/zero/zero3_partitioner.cpp, with train/zero/zero3_module_schedule.h (which module comes next).
//
// Life of a prefetched group g:
//   start_prefetch   a whole buffer is allocated (with parameter offload the shard is
//                    copied to the device first, on a GPU on the copy stream) and its
//                    all-gather started
//                    (Communicator::start_all_gather); g counts as live from now on
//   take_prefetched  gather() of g's module waits for that all-gather and uses the buffer
//   drop_prefetches  at the end of a pass, one never used is waited for and freed
#include <algorithm>
#include <utility>

#include "distributed/communicators/collective_label.h"
#include "runtime/error.h"
#include "train/zero/zero3_partitioner.h"

namespace zt::train {

using models::ModuleRef;

void Zero3Partitioner::begin_pass() {
  drop_prefetches();  // left over from a pass that ended in an error
  schedule_.begin_pass();
}

void Zero3Partitioner::end_pass() {
  schedule_.end_pass();
  drop_prefetches();
}

void Zero3Partitioner::drop_prefetches() {
  for (Group& group : groups_) {
    if (!group.prefetched.defined()) continue;
    // The gather must finish before its buffer returns to the allocator (and before the
    // optimizer rewrites the shard it reads).
    std::exchange(group.pending, nullptr)->wait();
    group.staged = Tensor();
    count_live(-group.prefetched.numel());
    group.prefetched = Tensor();
  }
}

Tensor Zero3Partitioner::take_prefetched(std::size_t g) {
  Group& group = groups_[g];
  if (!group.prefetched.defined()) return Tensor();
  std::exchange(group.pending, nullptr)->wait();
  group.staged = Tensor();  // the all-gather has read it
  ++counters_.used_groups;
  return std::exchange(group.prefetched, Tensor());  // still live: now in use
}

// After gather() of the module at `position`: start the modules that follow, in schedule
// order, while both limits leave room for the next one whole. A module already whole (in use,
// or fetched earlier) costs nothing and is passed over. When nothing is fetched ahead, the
// next module is fetched whatever its size: DeepSpeed prefetches parameter by parameter, we
// gather whole modules, and a bucket smaller than a layer (HF's "auto" is 0.9 hidden², a
// layer about 12 hidden²) would otherwise never prefetch at all.
void Zero3Partitioner::prefetch_after(std::size_t position) {
  if (limits_.bucket_numel <= 0) return;
  std::int64_t ahead = 0;  // fetched and not yet in use
  for (const Group& group : groups_)
    if (group.prefetched.defined()) ahead += group.prefetched.numel();
  for (const ModuleRef& next : schedule_.after(position)) {
    std::int64_t needed = 0;
    for (std::size_t g : groups_of(next))
      if (!is_whole(g)) needed += layout_.buckets[g].padded_numel;
    if (needed == 0) continue;
    const bool fits_bucket = ahead == 0 || ahead + needed <= limits_.bucket_numel;
    if (!fits_bucket || live_numel_ + needed > limits_.max_live_numel) return;
    for (std::size_t g : groups_of(next))
      if (!is_whole(g)) start_prefetch(g, next);
    ahead += needed;
  }
}

void Zero3Partitioner::start_prefetch(std::size_t g, const ModuleRef& module) {
  Group& group = groups_[g];
  group.prefetched = Tensor::empty({layout_.buckets[g].padded_numel}, group.dtype, device_);
  distributed::CollectiveLabel label(
      [&] { return "stage 3 prefetch " + models::module_name(module) + (group.trainable ? "" : " (frozen)"); });
  if (copy_stream_) {
    group.pending = gather_on_copy_stream(g, group.prefetched);
  } else {
    group.staged = shard_on_device(g);  // with parameter offload a device copy, kept until the gather is done
    group.pending = comm_.start_all_gather(group.staged, group.prefetched);
  }
  ++counters_.prefetched_groups;
  count_live(group.prefetched.numel());
}

void Zero3Partitioner::count_live(std::int64_t change) {
  live_numel_ += change;
  counters_.most_live_numel = std::max(counters_.most_live_numel, live_numel_);
}

}  // namespace zt::train
