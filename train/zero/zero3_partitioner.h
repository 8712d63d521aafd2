// ZeRO stage 3, the parameter side: the model's weights themselves are partitioned over
// ranks. Read with models/parameter_gatherer.h (when the model asks for a module) and
// train/zero/zero3_optimizer.h (the gradients and the update).
//
// Each module (the embedding, every decoder layer with its LoRA matrices, the final norm,
// the untied LM head, the P-Tuning prefix encoder) lays its partitioned parameters back to
// back in a flat buffer, one for the trainable ones and one for the frozen ones, padded so
// that every rank owns an equal chunk of a multiple of 16 elements whatever the tensor
// sizes (train/zero/zero_layout.h, make_flat_bucket). A rank keeps only its chunk, the shard, in
// the working dtype; the parameters' Variables hold an empty tensor.
//
//   gather(module)   all_gather of the module's shards into one whole flat buffer; each
//                    Variable's data becomes a view of its part (shape restored).
//   release(module)  each Variable's data is the empty tensor again; the whole buffer
//                    goes back to the allocator as soon as nothing (the autograd tape) else
//                    holds a view of it.
//
// Prefetch (train/zero/zero3_prefetch.cpp): inside a pass (begin_pass .. end_pass: one
// micro-batch's forward and backward) the partitioner follows the gather order of the previous
// pass (train/zero/zero3_module_schedule.h). Right after gather(module i) it starts the all-gathers
// of the modules that come next, while module i computes, as far as two DeepSpeed limits
// allow: stage3_prefetch_bucket_size elements fetched ahead and not yet in use (the next
// module is fetched even when it alone is larger), and stage3_max_live_parameters elements
// whole at once (in use plus fetched ahead, never exceeded by a prefetch). gather() of a
// prefetched module then only waits for its gather. Under NCCL the prefetch runs on the
// communicator's stream beside the compute stream; on the CPU it just runs earlier in order.
// The values gathered are the same either way, so results are bit for bit those without.
//
// Parameter offload (offload_param {device: cpu}): the shards live in host memory instead,
// page-locked on a GPU run with pin_memory (train/zero/zero3_param_offload.cpp). A gather
// first copies the rank's shard to the device, then all-gathers it as above; a prefetch
// copies on a copy stream of its own and all-gathers from there, so the copy of the next
// module runs beside the current one's compute, as its all-gather does. The device copy is
// freed once the all-gather has read it; the optimizer writes its updates into the host shards.
//
// Parameters of at most stage3_param_persistence_threshold elements (norm weights, biases)
// stay whole on every rank: gathering them would cost a collective for a few bytes.
// Frozen weights (freeze, LoRA, P-Tuning) are partitioned like trainable ones; they only
// have no optimizer state.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "distributed/communicator.h"
#include "models/model.h"
#include "runtime/streams/stream.h"
#include "train/optim/optimizer.h"
#include "train/zero/zero3_module_schedule.h"
#include "train/zero/zero_layout.h"

namespace zt::train {

// DeepSpeed's stage3_prefetch_bucket_size and stage3_max_live_parameters, in elements.
struct PrefetchLimits {
  std::int64_t bucket_numel = 0;    // fetched ahead and not yet in use, beyond the next module; 0: no prefetch
  std::int64_t max_live_numel = 0;  // whole at once; a prefetch never takes the total past it
};

// DeepSpeed's offload_param {device: cpu, pin_memory}.
struct ParameterOffloadOptions {
  bool enabled = false;
  bool pin_memory = false;  // page-locked host shards; applies on a GPU run only
};

// What parameter offload copied to the device, for the log and the tests.
struct ParameterOffloadCounters {
  std::int64_t copies = 0;  // shards copied to the device (one per gathered or prefetched group)
  std::int64_t bytes = 0;
  double seconds = 0.0;  // host time of the copies: the copies themselves on the CPU, their queueing on a GPU
};

// What prefetching did, for the log and the tests.
struct PrefetchCounters {
  std::int64_t prefetched_groups = 0;  // all-gathers started ahead
  std::int64_t used_groups = 0;        // of those, the ones a gather() took
  std::int64_t most_live_numel = 0;    // the most elements whole at once, prefetched ones included
};

class Zero3Partitioner : public models::ParameterGatherer {
 public:
  static constexpr std::int64_t kAlignment = 16;  // elements per chunk are a multiple of this
  static constexpr std::size_t kWhole = static_cast<std::size_t>(-1);

  struct Parameter {
    std::string name;
    autograd::Variable variable;
    Shape shape;
    models::ModuleRef module;
    bool trainable = false;
    bool weight_decay = false;
    bool persistent = false;     // kept whole on every rank
    std::size_t group = kWhole;  // its flat group when partitioned
  };

  // One flat buffer: a module's partitioned parameters, all trainable or all frozen.
  struct Group {
    models::ModuleRef module;
    bool trainable = false;
    DType dtype = DType::kF32;
    int users = 0;        // gathers not yet released
    Tensor prefetched{};  // whole buffer gathered ahead, not yet in use (undefined when none)
    std::shared_ptr<distributed::PendingCollective> pending{};  // its all-gather, until waited for
    Tensor staged{};  // with parameter offload: the shard's device copy that all-gather reads
  };

  // Partitions every parameter of `model` and the `trainable` ones it does not list (a
  // P-Tuning prefix encoder's), then hooks itself into the model. The values must be the
  // same on every rank (they are: loaded from the same files, drawn from the same seed).
  Zero3Partitioner(models::CausalLM& model, const std::vector<TrainableParameter>& trainable,
                   distributed::Communicator& communicator, std::int64_t persistence_threshold,
                   const PrefetchLimits& prefetch = {}, const ParameterOffloadOptions& offload = {});
  ~Zero3Partitioner() override;  // unhooks from the model; its partitioned weights stay empty
  Zero3Partitioner(const Zero3Partitioner&) = delete;
  Zero3Partitioner& operator=(const Zero3Partitioner&) = delete;

  // models::ParameterGatherer. Nested gathers of one module are counted.
  void gather(const models::ModuleRef& module) override;
  void release(const models::ModuleRef& module) override;

  // One micro-batch's forward and backward: gathers inside are recorded, and followed with
  // prefetches once a pass has been recorded. end_pass drops what was fetched and not used.
  void begin_pass();
  void end_pass();
  // Waits for and frees every prefetched buffer (before the shards change, and at pass ends).
  void drop_prefetches();
  const PrefetchLimits& prefetch_limits() const { return limits_; }
  const PrefetchCounters& prefetch_counters() const { return counters_; }
  bool offloads_parameters() const { return offload_.enabled; }
  const ParameterOffloadCounters& offload_counters() const { return offload_counters_; }

  const std::vector<Parameter>& parameters() const { return parameters_; }
  const std::vector<Group>& groups() const { return groups_; }
  // The flat layout of every group (bucket g is group g): offsets, padding, chunks.
  const ZeroLayout& layout() const { return layout_; }
  // This rank's chunk of group g, in the working dtype (the optimizer writes updates here);
  // in host memory with parameter offload.
  const Tensor& shard(std::size_t group) const { return shards_[group]; }
  distributed::Communicator& communicator() const { return comm_; }

  // Saving without a whole copy on any GPU. Collective: module by module the selected
  // partitioned parameters (all, or only the trainable ones) are gathered, copied into
  // rank `root`'s host memory and released; on `root`, `use` then runs with those
  // Variables holding the host copies (persistent ones are whole anyway), after which they
  // are released again. Other ranks do not run `use`.
  void with_whole_parameters_on_host(int root, bool only_trainable, const std::function<void()>& use);
  // Loading. Not collective: every rank points the selected partitioned Variables at whole
  // zero-filled host tensors, runs `fill` (which loads values into them), keeps its own
  // chunk of each and releases them.
  void load_through_host(bool only_trainable, const std::function<void()>& fill);

  // Elements this rank holds in the working dtype: its shards and the persistent parameters.
  std::int64_t held_numel() const;
  // Bytes of the shards on the device and in host memory (offloaded), persistent parameters apart.
  std::int64_t device_shard_bytes() const;
  std::int64_t host_shard_bytes() const;
  // The largest module, whole: what one gather adds for a while.
  std::int64_t largest_module_numel() const;

 private:
  const std::vector<std::size_t>& groups_of(const models::ModuleRef& module) const;
  std::pair<int, std::int64_t> key(const models::ModuleRef& module) const;
  void set_empty(Parameter& p);
  bool is_whole(std::size_t group) const { return groups_[group].users > 0 || groups_[group].prefetched.defined(); }
  Tensor all_gather_now(std::size_t group, const models::ModuleRef& module);
  Tensor take_prefetched(std::size_t group);
  void prefetch_after(std::size_t position);
  void start_prefetch(std::size_t group, const models::ModuleRef& module);
  void count_live(std::int64_t change);
  Tensor new_shard(std::int64_t numel, DType dtype) const;
  void copy_shard(std::size_t group, Tensor device_copy, cudaStream_t stream);
  Tensor shard_on_device(std::size_t group);
  std::unique_ptr<distributed::PendingCollective> gather_on_copy_stream(std::size_t group, const Tensor& whole);

  models::CausalLM& model_;
  distributed::Communicator& comm_;
  Device device_;
  std::vector<Parameter> parameters_;
  std::vector<Group> groups_;
  ZeroLayout layout_;
  std::vector<Tensor> shards_;
  std::vector<models::ModuleRef> modules_;  // in forward order
  std::map<std::pair<int, std::int64_t>, std::vector<std::size_t>> module_groups_;
  std::map<DType, Tensor> empty_;  // what a released parameter holds, per dtype
  PrefetchLimits limits_;
  ModuleSchedule schedule_;
  std::int64_t live_numel_ = 0;  // elements of the groups now whole (in use or prefetched)
  PrefetchCounters counters_;
  ParameterOffloadOptions offload_;
  ParameterOffloadCounters offload_counters_;
  std::optional<Stream> copy_stream_;  // parameter offload on a GPU: prefetched shards' copies
};

}  // namespace zt::train
