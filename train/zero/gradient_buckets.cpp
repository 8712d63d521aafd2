#include "train/zero/gradient_buckets.h"

#include <algorithm>
#include <utility>

#include "distributed/communicators/collective_label.h"
#include "ops/elementwise/accumulate.h"

namespace zt::train {
// A reduce-scatter started and not yet added to the partition: its input stays alive until
// the collective is done with it.
struct GradientBuckets::InFlight {
  std::size_t bucket = 0;
  Tensor staging, chunk;
  std::unique_ptr<distributed::PendingCollective> pending;
};

GradientBuckets::GradientBuckets(const ZeroLayout& layout, const Tensor& partition, distributed::Communicator& comm,
                                 Options options, Label label)
    : layout_(layout),
      partition_(partition),
      comm_(comm),
      options_(options),
      label_(std::move(label)),
      staging_(layout.buckets.size()),
      arrived_(layout.buckets.size(), 0) {
  if (options_.host_partition_threads > 0)
    host_sink_ = std::make_unique<HostGradientSink>(options_.host_partition_threads);
}

// A collective still reading a staging buffer must end before the buffer is freed.
GradientBuckets::~GradientBuckets() {
  if (in_flight_ && in_flight_->pending) in_flight_->pending->wait();
}

Tensor GradientBuckets::allocate(std::int64_t numel) {
  Tensor buffer = Tensor::zeros({numel}, options_.dtype, options_.device);
  staged_bytes_ += static_cast<std::int64_t>(buffer.nbytes());
  most_staged_bytes_ = std::max(most_staged_bytes_, staged_bytes_);
  return buffer;
}

void GradientBuckets::release(const Tensor& buffer) { staged_bytes_ -= static_cast<std::int64_t>(buffer.nbytes()); }

void GradientBuckets::add(std::size_t b, std::size_t slot, const Tensor& grad) {
  const ZeroBucket& bucket = layout_.buckets[b];
  if (!staging_[b].defined()) {
    make_room();
    staging_[b] = allocate(bucket.padded_numel);
    filling_.push_back(b);
  }
  ops::accumulate_(staging_[b].narrow(0, bucket.offsets[slot], bucket.numels[slot]),
                   grad.reshape({bucket.numels[slot]}));
  if (++arrived_[b] < bucket.parameters.size()) return;
  arrived_[b] = 0;
  reduce(b);
}

// Within most_staged, room for one more staging buffer.
void GradientBuckets::make_room() {
  if (options_.most_staged == 0) return;
  while (filling_.size() + (in_flight_ ? 1 : 0) >= options_.most_staged) {
    if (in_flight_)
      finish_in_flight();
    else
      reduce(filling_.front());
  }
}

// Bucket b's staged gradients over ranks: all-reduced into the whole partition (stage 0), or
// reduce-scattered, this rank's chunk added to its partition now or, overlapped, once the
// next reduction starts.
void GradientBuckets::reduce(std::size_t b) {
  finish_in_flight();
  filling_.erase(std::find(filling_.begin(), filling_.end(), b));
  auto flight = std::make_unique<InFlight>();
  flight->bucket = b;
  flight->staging = std::exchange(staging_[b], Tensor());
  distributed::CollectiveLabel collective([&] { return label_(b); });
  if (options_.all_reduce) {
    comm_.all_reduce(flight->staging, distributed::ReduceOp::kSum);
    flight->chunk = flight->staging;
  } else {
    flight->chunk = allocate(layout_.buckets[b].chunk());
    if (options_.overlap)
      flight->pending = comm_.start_reduce_scatter(flight->staging, flight->chunk);
    else
      comm_.reduce_scatter(flight->staging, flight->chunk);
  }
  in_flight_ = std::move(flight);
  if (!options_.overlap) finish_in_flight();
}

void GradientBuckets::finish_in_flight() {
  if (!in_flight_) return;
  std::unique_ptr<InFlight> flight = std::move(in_flight_);
  if (flight->pending) flight->pending->wait();
  const std::size_t b = flight->bucket;
  add_to_partition(partition_.narrow(0, layout_.partition_offset(b), layout_.buckets[b].chunk()), flight->chunk);
  release(flight->staging);
  if (!options_.all_reduce) release(flight->chunk);
}

void GradientBuckets::add_to_partition(const Tensor& target, const Tensor& chunk) {
  if (host_sink_)
    host_sink_->add(target, chunk);
  else
    ops::accumulate_(target, chunk);
}

void GradientBuckets::finish() {
  while (!filling_.empty()) reduce(filling_.front());
  finish_in_flight();
  if (host_sink_) host_sink_->finish();
  std::fill(arrived_.begin(), arrived_.end(), 0);
}

}  // namespace zt::train
