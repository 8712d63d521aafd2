#include "train/optim/optimizer_offload.h"

#include <algorithm>
#include <chrono>
#include <sstream>
#include <utility>

#include "runtime/error.h"
#include "runtime/log.h"
#include "runtime/profile/step_profiler.h"
#include "runtime/streams/current_stream.h"
#include "runtime/terminal/byte_format.h"
#include "train/optim/adamw_step_core.h"

namespace zt::train {
namespace {

constexpr std::int64_t kAlignment = 64;  // each host array starts on its own cache line

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::int64_t aligned(std::int64_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

}  // namespace

bool gradients_stay_on_device(GradientPlacement placement, std::int64_t accumulation, std::int64_t partition_bytes,
                              std::int64_t device_bytes) {
  if (placement != GradientPlacement::kAuto) return placement == GradientPlacement::kDevice;
  return accumulation > 1 && partition_bytes <= device_bytes / 4;
}

double OffloadStepTimes::hidden() const {
  const double work = cpu_seconds + copy_seconds;
  if (work <= 0.0) return 0.0;
  return std::clamp(1.0 - wait_seconds / work, 0.0, 1.0);
}

double OffloadStepStats::overlap() const {
  if (copy_seconds <= 0.0) return 0.0;
  return std::clamp((copy_seconds + adam_seconds - step_seconds) / copy_seconds, 0.0, 1.0);
}

OptimizerOffload::OptimizerOffload(const Tensor& master, std::vector<OffloadSegment> segments, DType working_dtype,
                                   Device device, const OptimizerConfig& config, const OffloadOptions& options)
    : config_(config), device_(device), adam_(options.threads), log_report_(options.log_report) {
  const std::int64_t numel = master.numel();
  ZT_REQUIRE(options.tile_numel > 0,
             "optimizer offload: tile_numel must be > 0, got " + std::to_string(options.tile_numel));
  std::sort(segments.begin(), segments.end(), [](auto& a, auto& b) { return a.offset < b.offset; });
  for (const OffloadSegment& s : segments)
    ZT_REQUIRE(s.offset >= 0 && s.numel >= 0 && s.offset + s.numel <= numel,
               "optimizer offload: segment [" + std::to_string(s.offset) + ", +" + std::to_string(s.numel) +
                   ") lies outside the partition of " + std::to_string(numel) + " elements");
  for (std::int64_t begin = 0; begin < numel; begin += options.tile_numel) {
    Tile tile{begin, std::min(numel, begin + options.tile_numel), {}};
    for (const OffloadSegment& s : segments) {
      const std::int64_t from = std::max(tile.begin, s.offset), to = std::min(tile.end, s.offset + s.numel);
      if (from < to) tile.segments.push_back({from, to - from, s.weight_decay});
    }
    tiles_.push_back(std::move(tile));
  }
  // Page-locking only speeds up copies to and from a GPU (and needs one).
  allocate_host(numel, working_dtype, options.pin_memory && device.is_cuda());
  master_.copy_from(master.reshape({numel}));
  if (!device.is_cuda()) return;
  to_host_ = Stream::create();
  to_device_ = Stream::create();
  for (std::size_t i = 0; i < 4 * tiles_.size(); ++i) copy_marks_.emplace_back(true);
}

// One block, carved into the five host arrays, so pinning costs one allocation.
void OptimizerOffload::allocate_host(std::int64_t numel, DType working_dtype, bool pinned) {
  const std::int64_t fp32_bytes = aligned(numel * 4);
  const std::int64_t total = 4 * fp32_bytes + aligned(numel * static_cast<std::int64_t>(dtype_size(working_dtype)));
  Tensor block = pinned ? Tensor::empty_pinned({total}, DType::kU8) : Tensor::empty({total}, DType::kU8);
  auto* base = block.data<std::uint8_t>();
  auto carve = [&](int index, DType dtype) {
    Tensor part = Tensor::from_blob(base + index * fp32_bytes, {numel}, dtype, Device::cpu(), block.storage());
    part.zero_();
    return part;
  };
  master_ = carve(0, DType::kF32);
  exp_avg_ = carve(1, DType::kF32);
  exp_avg_sq_ = carve(2, DType::kF32);
  grads_ = carve(3, DType::kF32);
  working_ = carve(4, working_dtype);
  host_bytes_ = total;
  pinned_ = pinned;
}

void OptimizerOffload::update_tile(const Tile& tile, const ops::AdamWConfig& adam, OffloadStepStats& into) {
  ProfileRegion updating(OpFamily::kCpuAdam);
  const auto start = std::chrono::steady_clock::now();
  const std::int64_t working_size = static_cast<std::int64_t>(dtype_size(working_.dtype()));
  std::vector<ops::CpuAdamSpan> spans;
  for (const OffloadSegment& s : tile.segments) {
    const double decay = update_weight_decay(grads_.narrow(0, s.offset, s.numel), master_.narrow(0, s.offset, s.numel),
                                             s.weight_decay, config_, adam.grad_scale);
    spans.push_back({master_.data<float>() + s.offset, exp_avg_.data<float>() + s.offset,
                     exp_avg_sq_.data<float>() + s.offset, grads_.data<float>() + s.offset,
                     static_cast<char*>(working_.data_ptr()) + s.offset * working_size, working_.dtype(), s.numel,
                     decay});
  }
  const bool skipped = adam_.step(spans, adam);
  ZT_REQUIRE(!skipped, "optimizer offload: gradient elements [" + std::to_string(tile.begin) + ", " +
                           std::to_string(tile.end) +
                           ") hold inf/NaN although the gradient norm was finite; "
                           "earlier tiles are already updated, so this run cannot continue");
  for (const ops::CpuAdamSpan& span : spans) into.parameters += span.numel;
  into.adam_seconds += seconds_since(start);
}

void OptimizerOffload::step(const Tensor& grads, const Tensor& working, const ops::AdamWConfig& adam,
                            const std::function<void()>& beside) {
  ZT_REQUIRE(grads.numel() == master_.numel() && working.numel() == master_.numel(),
             "optimizer offload: the partition has " + std::to_string(master_.numel()) + " elements but step got " +
                 std::to_string(grads.numel()) + " gradients and " + std::to_string(working.numel()) + " weights");
  const auto start = std::chrono::steady_clock::now();
  last_ = {};
  last_.copied_bytes = static_cast<std::int64_t>((holds(grads) ? 0 : grads_.nbytes()) + working_.nbytes());
  if (device_.is_cuda())
    step_pipelined(grads, working, adam, beside);
  else
    step_on_host(grads, working, adam, beside);
  last_.step_seconds = seconds_since(start);
}

Tensor OptimizerOffload::step(const Tensor& grads, const ops::AdamWConfig& adam) {
  Tensor working = Tensor::empty({master_.numel()}, working_.dtype(), device_);
  step(grads, working, adam);
  return working;
}

void OptimizerOffload::step_on_host(const Tensor& grads, const Tensor& working, const ops::AdamWConfig& adam,
                                    const std::function<void()>& beside) {
  if (beside) beside();
  for (const Tile& tile : tiles_) {
    const std::int64_t n = tile.end - tile.begin;
    auto copy_start = std::chrono::steady_clock::now();
    if (!holds(grads)) {
      ProfileRegion copying(OpFamily::kOffloadCopy);
      grads_.narrow(0, tile.begin, n).copy_from(grads.narrow(0, tile.begin, n));
    }
    last_.copy_seconds += seconds_since(copy_start);
    update_tile(tile, adam, last_);
    copy_start = std::chrono::steady_clock::now();
    {
      ProfileRegion copying(OpFamily::kOffloadCopy);
      working.narrow(0, tile.begin, n).copy_from(working_.narrow(0, tile.begin, n));
    }
    last_.copy_seconds += seconds_since(copy_start);
  }
}

// Every gradient tile is queued at once (none when they are in the host block already); tile i is updated as soon as it
// has landed, while the copy engine carries on with the next, and its weights are queued back on the other stream. Both
// streams first wait for the compute stream's work so far: what produced the gradients, and whatever last used the
// memory `working` was given.
void OptimizerOffload::step_pipelined(const Tensor& grads, const Tensor& working, const ops::AdamWConfig& adam,
                                      const std::function<void()>& beside) {
  queue_gradients_to_host(grads);
  if (beside) beside();
  for (std::size_t i = 0; i < tiles_.size(); ++i) {
    {
      ProfileRegion copying(OpFamily::kOffloadCopy);
      copy_marks_[4 * i + 1].synchronize();
    }
    update_tile(tiles_[i], adam, last_);
    queue_weights_to_device(i, working);
  }
  // The host weights are rewritten next step, and the all-gather reads the device copy.
  {
    ProfileRegion copying(OpFamily::kOffloadCopy);
    to_device_->synchronize();
  }
  add_copy_seconds();
}

// Both copy streams first wait for the compute stream's work so far: what produced the
// gradients, and whatever last used the memory the weights go back to.
void OptimizerOffload::queue_gradients_to_host(const Tensor& grads) {
  const cudaStream_t to_host = to_host_->get();
  Event compute_done;
  compute_done.record(current_stream());
  compute_done.wait_on(to_host);
  compute_done.wait_on(to_device_->get());
  for (std::size_t i = 0; i < tiles_.size(); ++i) {
    const std::int64_t begin = tiles_[i].begin, n = tiles_[i].end - begin;
    copy_marks_[4 * i].record(to_host);
    if (!holds(grads)) grads_.narrow(0, begin, n).copy_from_async(grads.narrow(0, begin, n), to_host);
    copy_marks_[4 * i + 1].record(to_host);
  }
}

// Tile i's new weights from the host block into `working`, on the copy stream back, timed.
void OptimizerOffload::queue_weights_to_device(std::size_t i, const Tensor& working) {
  const std::int64_t begin = tiles_[i].begin, n = tiles_[i].end - begin;
  copy_marks_[4 * i + 2].record(to_device_->get());
  working.narrow(0, begin, n).copy_from_async(working_.narrow(0, begin, n), to_device_->get());
  copy_marks_[4 * i + 3].record(to_device_->get());
}

void OptimizerOffload::add_copy_seconds() {
  for (std::size_t i = 0; i < tiles_.size(); ++i)
    last_.copy_seconds += (copy_marks_[4 * i].elapsed_ms(copy_marks_[4 * i + 1]) +
                           copy_marks_[4 * i + 2].elapsed_ms(copy_marks_[4 * i + 3])) /
                          1000.0;
}

OptimizerOffload::~OptimizerOffload() {
  if (running_.valid()) running_.wait();
}

void OptimizerOffload::start(const Tensor& grads, const ops::AdamWConfig& adam) {
  ZT_REQUIRE(!pending(), "optimizer offload: an update is still running; land it before starting the next");
  ZT_REQUIRE(!holds(grads),
             "optimizer offload: the delayed update needs the gradients outside the host block, which "
             "the next step accumulates into while this update reads it");
  ZT_REQUIRE(grads.numel() == master_.numel(), "optimizer offload: the partition has " +
                                                   std::to_string(master_.numel()) + " elements but start got " +
                                                   std::to_string(grads.numel()) + " gradients");
  const auto start_time = std::chrono::steady_clock::now();
  started_ = {};
  started_.copied_bytes = static_cast<std::int64_t>(grads_.nbytes() + working_.nbytes());
  if (device_.is_cuda()) {
    queue_gradients_to_host(grads);
    gradients_left_.emplace();
    gradients_left_->record(to_host_->get());
  } else {
    const auto copy_start = std::chrono::steady_clock::now();
    grads_.copy_from(grads);
    started_.copy_seconds += seconds_since(copy_start);
  }
  // The thread reads `adam` by value and touches only the host block; each tile waits for its
  // own copy.
  running_ = std::async(std::launch::async, [this, adam] {
    OffloadStepStats updated;
    for (std::size_t i = 0; i < tiles_.size(); ++i) {
      if (device_.is_cuda()) copy_marks_[4 * i + 1].synchronize();
      update_tile(tiles_[i], adam, updated);
    }
    return updated;
  });
  started_.step_seconds = seconds_since(start_time);
}

void OptimizerOffload::before_gradients_change() {
  if (gradients_left_) gradients_left_->wait_on(current_stream());
}

void OptimizerOffload::land(const Tensor& working) {
  ZT_REQUIRE(pending(), "optimizer offload: no update is running");
  ZT_REQUIRE(working.numel() == master_.numel(), "optimizer offload: the partition has " +
                                                     std::to_string(master_.numel()) + " elements but land got " +
                                                     std::to_string(working.numel()) + " weights");
  const auto land_start = std::chrono::steady_clock::now();
  last_ = started_;
  {
    ProfileRegion waiting(OpFamily::kCpuAdam);  // the part of the CPU Adam the next step did not cover
    const OffloadStepStats updated = running_.get();
    last_.parameters = updated.parameters;
    last_.adam_seconds = updated.adam_seconds;
  }
  gradients_left_.reset();
  const auto copy_start = std::chrono::steady_clock::now();
  if (device_.is_cuda()) {
    Event compute_done;  // whatever last used the memory the weights go to
    compute_done.record(current_stream());
    compute_done.wait_on(to_device_->get());
    for (std::size_t i = 0; i < tiles_.size(); ++i) queue_weights_to_device(i, working);
    ProfileRegion copying(OpFamily::kOffloadCopy);
    to_device_->synchronize();
    add_copy_seconds();
  } else {
    ProfileRegion copying(OpFamily::kOffloadCopy);
    working.narrow(0, 0, working.numel()).copy_from(working_);
    last_.copy_seconds += seconds_since(copy_start);
  }
  last_.step_seconds += seconds_since(land_start);
}

std::string OptimizerOffload::report() const {
  std::ostringstream line;
  line.precision(3);
  const double adam = std::max(last_.adam_seconds, 1e-9), copies = std::max(last_.copy_seconds, 1e-9);
  line << "optimizer offload: CPU Adam (" << ops::cpu_adam_isa_name(adam_.isa()) << ", " << adam_.threads()
       << " threads) updated " << last_.parameters << " parameters at " << static_cast<double>(last_.parameters) / adam
       << " parameters/s; copies " << static_cast<double>(last_.copied_bytes) / copies / 1e9 << " GB/s, "
       << 100.0 * last_.overlap() << "% of their time overlapped with the update; host memory "
       << format_bytes(static_cast<std::size_t>(host_bytes_)) << (pinned_ ? " pinned" : " pageable");
  return line.str();
}

void OptimizerOffload::log_report_once() {
  if (last_.parameters == 0) return;  // nothing measured yet: a delayed update's first step
  if (log_report_ && !std::exchange(reported_, true)) ZT_LOG(kInfo, report());
}

}  // namespace zt::train
