// Optimizer offload (DeepSpeed's zero_optimization.offload_optimizer {device: cpu}): the fp32
// master weights and Adam moments of one flat partition live in host memory, page-locked
// with pin_memory on a GPU run, and the CPU Adam (ops/optim/cpu_adam.h) updates them. Each step
// the device's fp32 gradients come to the host and the new weights, in the working dtype,
// go back, tile by tile: on a GPU every gradient tile is queued on one copy stream at once,
// the CPU updates tile i as soon as it has landed (while later tiles are still copying) and
// queues tile i's weights back on a second stream. On a CPU run the same tiles are copied
// host to host, one after the other. An engine that accumulates its gradients in the host
// block itself (ZeRO, as DeepSpeed does under offload: host_grads()) hands that block to
// step(), and only the weights are copied.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ops/optim/cpu_adam.h"
#include "runtime/streams/stream.h"
#include "tensor/tensor.h"
#include "train/optim/optimizer_config.h"

namespace zt::train {

// Where a ZeRO engine under optimizer offload accumulates the rank's fp32 gradient partition.
// In host memory (as DeepSpeed does) it takes no device memory, but every micro-batch's
// reduced gradients are copied out and added by the CPU, which over an accumulation window
// costs more host bandwidth than the CPU Adam itself; on the device they are summed where
// they are made and copied to the host once, tile by tile beside the CPU Adam (4 bytes a
// parameter of the rank's partition on the device).
enum class GradientPlacement {
  kAuto,  // on the device when gradients accumulate over micro-batches and fit (gradients_stay_on_device)
  kHost,
  kDevice,
};

// kAuto's rule: the device keeps the partition when the step accumulates more than one
// micro-batch and the partition takes at most a quarter of the device memory the process
// may use (the card, or ZT_CUDA_MEMORY_LIMIT's cap). The estimate (train/memory_estimate.h)
// follows the same rule.
bool gradients_stay_on_device(GradientPlacement placement, std::int64_t accumulation, std::int64_t partition_bytes,
                              std::int64_t device_bytes);

struct OffloadOptions {
  bool enabled = false;
  bool pin_memory = false;            // page-locked host memory; applies on a GPU run only
  std::int64_t tile_numel = 1 << 22;  // elements copied and updated at a time
  int threads = 0;                    // CPU Adam threads; 0: ops::default_cpu_adam_threads()
  bool log_report = true;             // log the first update's figures (under ZeRO, rank 0 only)
  // The engine accumulates its fp32 gradients in the host block (AdamWStepCore::grads() is
  // host_grads()), so that they take no device memory: what ZeRO's engines decide from
  // `gradients` and `accumulation` (ZeroEngine::hold_state).
  bool gradients_on_host = false;
  // DeepSpeed's offload_optimizer.ratio (ZeRO-Offload++): the share of the partition the CPU
  // Adam updates; the rest stays on the device and is updated there at the same time
  // (AdamWStepCore). Below 1 the gradients stay on the device.
  double ratio = 1.0;
  GradientPlacement gradients = GradientPlacement::kAuto;
  std::int64_t accumulation = 1;  // micro-batches per optimizer step
  // ZeRO-Offload's one-step delayed parameter update (--offload_delayed_update): each step's
  // CPU Adam runs behind the next step's forward and backward, whose weights are one update
  // older; the update lands at the next step (AdamWStepCore::settle). Needs the gradients on
  // the device and the whole partition on the CPU (ratio 1).
  bool delayed_update = false;
};

// A run of the partition that belongs to one parameter, with that parameter's weight decay.
struct OffloadSegment {
  std::int64_t offset = 0;
  std::int64_t numel = 0;
  double weight_decay = 0.0;
};

// What one offloaded update measured.
struct OffloadStepStats {
  std::int64_t parameters = 0;  // elements the CPU Adam updated
  double adam_seconds = 0.0;    // the CPU Adam's own time
  double copy_seconds = 0.0;    // both directions, as the copies themselves took
  double step_seconds = 0.0;    // wall time of the whole update, copies included
  std::int64_t copied_bytes = 0;
  // The share of the copy time hidden behind the CPU Adam (0 when the copies ran alone).
  double overlap() const;
};

// One optimizer step's offload work, as the training log reports it (offload_* keys).
struct OffloadStepTimes {
  double cpu_seconds = 0.0;   // the CPU Adam, and the host's gradient additions
  double copy_seconds = 0.0;  // host<->device copies of gradients and weights
  double wait_seconds = 0.0;  // how long the training loop waited for them: the device idled
  // The share of the offload's work (CPU and copies) that ran behind the device's own.
  double hidden() const;
};

class OptimizerOffload {
 public:
  // `master`: the partition's initial fp32 master weights (any device). Gradients and
  // working weights passed to step() live on `device`.
  OptimizerOffload(const Tensor& master, std::vector<OffloadSegment> segments, DType working_dtype, Device device,
                   const OptimizerConfig& config, const OffloadOptions& options);
  OptimizerOffload(const OptimizerOffload&) = delete;
  OptimizerOffload& operator=(const OptimizerOffload&) = delete;
  // Waits for a started update: its thread writes the host block.
  ~OptimizerOffload();

  // Host fp32 tensors of the partition's numel; views into them stay valid.
  const Tensor& master() const { return master_; }
  const Tensor& exp_avg() const { return exp_avg_; }
  const Tensor& exp_avg_sq() const { return exp_avg_sq_; }
  // The host block's fp32 gradients: step() given this very tensor copies no gradient.
  const Tensor& host_grads() const { return grads_; }

  // One AdamW update from `grads` (fp32, the partition, on the device or host_grads()), writing the new
  // weights rounded to the working dtype into `working` (the partition, on the device).
  // The caller has already skipped a step with a non-finite gradient norm.
  // `beside`, when given, runs once the gradients' copies to the host are queued and before
  // the CPU Adam starts: device work queued there (the device's share of a partial offload)
  // runs while the host updates.
  void step(const Tensor& grads, const Tensor& working, const ops::AdamWConfig& adam,
            const std::function<void()>& beside = {});
  // The same, into a new device tensor of the working dtype, which it returns: what ZeRO
  // then writes into the rank's shards or all-gathers.
  Tensor step(const Tensor& grads, const ops::AdamWConfig& adam);

  // The delayed update in two halves. start() queues the gradients' copies to the host (on a
  // CPU run it copies them) and returns while the CPU Adam updates the host block on a thread
  // of its own; `grads` (not the host block) may be written again once
  // before_gradients_change() has ordered the compute stream after those copies. land() waits
  // for that update and copies its new weights into `working` (the partition, on the device);
  // an error of the update surfaces there.
  void start(const Tensor& grads, const ops::AdamWConfig& adam);
  bool pending() const { return running_.valid(); }
  void before_gradients_change();
  void land(const Tensor& working);

  DType working_dtype() const { return working_.dtype(); }
  std::int64_t numel() const { return master_.numel(); }

  std::int64_t host_bytes() const { return host_bytes_; }
  const OffloadStepStats& last_step() const { return last_; }
  // One line for the log: CPU Adam throughput, copy rate and overlap, host memory held.
  std::string report() const;
  // report() at info level, after the first update only (later ones say the same), unless
  // the options turned it off.
  void log_report_once();

 private:
  struct Tile {
    std::int64_t begin = 0, end = 0;
    std::vector<OffloadSegment> segments;  // the parts of segments inside [begin, end)
  };
  void allocate_host(std::int64_t numel, DType working_dtype, bool pinned);
  // Adds the tile's parameters and CPU Adam seconds to `into`.
  void update_tile(const Tile& tile, const ops::AdamWConfig& adam, OffloadStepStats& into);
  bool holds(const Tensor& grads) const { return grads.data_ptr() == grads_.data_ptr(); }
  void step_on_host(const Tensor& grads, const Tensor& working, const ops::AdamWConfig& adam,
                    const std::function<void()>& beside);
  void step_pipelined(const Tensor& grads, const Tensor& working, const ops::AdamWConfig& adam,
                      const std::function<void()>& beside);
  void queue_gradients_to_host(const Tensor& grads);
  void queue_weights_to_device(std::size_t tile, const Tensor& working);
  void add_copy_seconds();

  OptimizerConfig config_;
  Device device_;
  std::vector<Tile> tiles_;
  ops::CpuAdam adam_;
  Tensor master_, exp_avg_, exp_avg_sq_, grads_, working_;  // host
  std::int64_t host_bytes_ = 0;
  bool pinned_ = false;
  std::optional<Stream> to_host_, to_device_;  // GPU runs only
  std::vector<Event> copy_marks_;              // per tile: d2h start, d2h end, h2d start, h2d end
  OffloadStepStats last_;
  bool log_report_;
  bool reported_ = false;
  std::future<OffloadStepStats> running_;  // the started update's CPU Adam (delayed update)
  OffloadStepStats started_;               // the started update's figures so far
  std::optional<Event> gradients_left_;
};

}  // namespace zt::train
