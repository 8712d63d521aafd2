#include "train/zero/zero3_partitioner.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "autograd/grad_mode.h"
#include "distributed/communicators/collective_label.h"
#include "runtime/error.h"

namespace zt::train {
namespace {

using models::ModuleKind;
using models::ModuleRef;

Tensor flat(const Tensor& t) { return t.view({t.numel()}); }

}  // namespace

Zero3Partitioner::Zero3Partitioner(models::CausalLM& model, const std::vector<TrainableParameter>& trainable,
                                   distributed::Communicator& communicator, std::int64_t persistence_threshold,
                                   const PrefetchLimits& prefetch, const ParameterOffloadOptions& offload)
    : model_(model), comm_(communicator), device_(model.device()), limits_(prefetch), offload_(offload) {
  ZT_REQUIRE(model_.parameter_gatherer() == nullptr, "ZeRO-3: the model is already partitioned by another partitioner");
  if (offload_.enabled && device_.is_cuda()) copy_stream_ = Stream::create();
  autograd::NoGradGuard no_recording;
  // Which parameters train, and with which weight decay.
  std::unordered_map<const autograd::VariableImpl*, const TrainableParameter*> trains;
  for (const TrainableParameter& p : trainable) trains[p.variable.impl().get()] = &p;
  std::vector<models::ModuleParameters> modules = model_.modules();
  std::unordered_set<const autograd::VariableImpl*> listed;
  for (const models::ModuleParameters& m : modules)
    for (const models::NamedParameter& p : m.parameters) listed.insert(p.variable.impl().get());
  // Trained parameters the model does not list are the prefix encoder's: the model gathers
  // them around the prefix computation.
  models::ModuleParameters prefix{{ModuleKind::kPrefixEncoder}, {}};
  for (const TrainableParameter& p : trainable)
    if (!listed.count(p.variable.impl().get())) prefix.parameters.push_back({p.name, p.variable});
  if (!prefix.parameters.empty()) {
    ZT_REQUIRE(static_cast<bool>(model_.prefix_source()),
               "ZeRO-3: trainable parameter '" + prefix.parameters[0].name +
                   "' is neither the model's nor a prefix encoder's; stage 3 does not know when it is used");
    modules.push_back(std::move(prefix));
  }

  // Every parameter: whole (persistent) or in its module's trainable or frozen flat group.
  const int world = comm_.world_size();
  std::vector<ZeroBucket> buckets;
  for (const models::ModuleParameters& m : modules) {
    modules_.push_back(m.module);
    std::vector<std::size_t> members[2];  // [frozen, trainable]
    for (const models::NamedParameter& named : m.parameters) {
      Parameter p;
      p.name = named.name;
      p.variable = named.variable;
      p.shape = named.variable.data().shape();
      p.module = m.module;
      auto it = trains.find(named.variable.impl().get());
      p.trainable = it != trains.end();
      if (p.trainable) {
        p.name = it->second->name;  // the name optimizer state is saved under
        p.weight_decay = it->second->weight_decay;
      }
      p.persistent = named.variable.data().numel() <= persistence_threshold;
      if (!p.persistent) members[p.trainable ? 1 : 0].push_back(parameters_.size());
      parameters_.push_back(std::move(p));
    }
    for (bool trains_group : {true, false}) {
      const std::vector<std::size_t>& indices = members[trains_group ? 1 : 0];
      if (indices.empty()) continue;
      std::vector<std::int64_t> numels;
      for (std::size_t i : indices) numels.push_back(shape_numel(parameters_[i].shape));
      const std::size_t g = groups_.size();
      groups_.push_back({m.module, trains_group, parameters_[indices[0]].variable.data().dtype(), 0});
      for (std::size_t i : indices) {
        ZT_REQUIRE(parameters_[i].variable.data().dtype() == groups_[g].dtype,
                   "ZeRO-3: the parameters of the " + models::module_name(m.module) + " are not of one dtype");
        parameters_[i].group = g;
      }
      module_groups_[key(m.module)].push_back(g);
      buckets.push_back(make_flat_bucket(indices, numels, world, kAlignment));
    }
  }
  layout_ = layout_of(std::move(buckets), world);

  // Keep this rank's chunk of every group, then let go of the whole values.
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    Tensor shard = new_shard(layout_.buckets[g].chunk(), groups_[g].dtype);
    for (const OwnedPiece& piece : layout_.owned_pieces(g, comm_.rank()))
      shard.narrow(0, piece.chunk_offset, piece.numel)
          .copy_from(flat(parameters_[piece.parameter].variable.data()).narrow(0, piece.parameter_offset, piece.numel));
    shards_.push_back(shard);
  }
  for (Parameter& p : parameters_) {
    if (!p.persistent) {
      set_empty(p);
      continue;
    }
    // A persistent parameter allocated together with others (a layer's joined q/k/v,
    // models/model.cpp) takes a copy of its own, so the shared allocation goes with them.
    const Tensor& value = p.variable.data();
    if (value.storage()->nbytes() > static_cast<std::size_t>(value.numel()) * dtype_size(value.dtype()))
      p.variable.impl()->data = value.clone();
  }
  model_.set_parameter_gatherer(this);
}

Zero3Partitioner::~Zero3Partitioner() {
  if (model_.parameter_gatherer() == this) model_.set_parameter_gatherer(nullptr);
  try {
    drop_prefetches();  // no gather may still write into memory that is about to be freed
  } catch (...) {       // a failed collective has already failed the rank
  }
}

std::pair<int, std::int64_t> Zero3Partitioner::key(const ModuleRef& module) const {
  return {static_cast<int>(module.kind), module.kind == ModuleKind::kLayer ? module.layer : 0};
}

const std::vector<std::size_t>& Zero3Partitioner::groups_of(const ModuleRef& module) const {
  static const std::vector<std::size_t> kNone;
  auto it = module_groups_.find(key(module));
  return it == module_groups_.end() ? kNone : it->second;
}

void Zero3Partitioner::set_empty(Parameter& p) {
  const DType dtype = p.variable.data().dtype();
  auto [it, added] = empty_.try_emplace(dtype);
  if (added) it->second = Tensor::empty({0}, dtype, device_);
  p.variable.impl()->data = it->second;
}

// Makes a module whole: each group takes its prefetched buffer, or is all-gathered now (every
// rank contributes its shard and receives the whole flat buffer, padding included, in rank
// order); each Variable then views its part. Inside a pass, the next modules are prefetched.
void Zero3Partitioner::gather(const ModuleRef& module) {
  const std::optional<std::size_t> position = schedule_.observe(module);
  for (std::size_t g : groups_of(module)) {
    if (groups_[g].users++ > 0) continue;  // already whole
    Tensor whole = take_prefetched(g);
    if (!whole.defined()) whole = all_gather_now(g, module);
    const ZeroBucket& bucket = layout_.buckets[g];
    for (std::size_t k = 0; k < bucket.parameters.size(); ++k) {
      Parameter& p = parameters_[bucket.parameters[k]];
      p.variable.impl()->data = whole.narrow(0, bucket.offsets[k], bucket.numels[k]).view(p.shape);
    }
  }
  if (position) prefetch_after(*position);
}

Tensor Zero3Partitioner::all_gather_now(std::size_t g, const ModuleRef& module) {
  Tensor whole = Tensor::empty({layout_.buckets[g].padded_numel}, groups_[g].dtype, device_);
  distributed::CollectiveLabel label(
      [&] { return "stage 3 gather " + models::module_name(module) + (groups_[g].trainable ? "" : " (frozen)"); });
  comm_.all_gather(shard_on_device(g), whole);
  count_live(layout_.buckets[g].padded_numel);
  return whole;
}

void Zero3Partitioner::release(const ModuleRef& module) {
  for (std::size_t g : groups_of(module)) {
    ZT_REQUIRE(groups_[g].users > 0,
               "ZeRO-3: the " + models::module_name(module) + " was released more often than gathered");
    if (--groups_[g].users > 0) continue;
    for (std::size_t i : layout_.buckets[g].parameters) set_empty(parameters_[i]);
    count_live(-layout_.buckets[g].padded_numel);
  }
}

void Zero3Partitioner::with_whole_parameters_on_host(int root, bool only_trainable, const std::function<void()>& use) {
  autograd::NoGradGuard no_recording;
  auto selected = [&](const Parameter& p) { return !p.persistent && (p.trainable || !only_trainable); };
  std::vector<std::pair<std::size_t, Tensor>> host;
  for (const ModuleRef& module : modules_) {
    bool wanted = false;
    for (std::size_t g : groups_of(module))
      for (std::size_t i : layout_.buckets[g].parameters) wanted |= selected(parameters_[i]);
    if (!wanted) continue;
    gather(module);  // one module whole on the device at a time
    if (comm_.rank() == root)
      for (std::size_t g : groups_of(module))
        for (std::size_t i : layout_.buckets[g].parameters) {
          if (!selected(parameters_[i])) continue;
          Tensor copy = Tensor::empty(parameters_[i].shape, parameters_[i].variable.data().dtype(), Device::cpu());
          copy.copy_from(parameters_[i].variable.data());
          host.emplace_back(i, copy);
        }
    release(module);
  }
  if (comm_.rank() != root) return;
  for (auto& [i, copy] : host) parameters_[i].variable.impl()->data = copy;
  try {
    use();
  } catch (...) {
    for (auto& [i, copy] : host) set_empty(parameters_[i]);
    throw;
  }
  for (auto& [i, copy] : host) set_empty(parameters_[i]);
}

void Zero3Partitioner::load_through_host(bool only_trainable, const std::function<void()>& fill) {
  autograd::NoGradGuard no_recording;
  drop_prefetches();  // the shards are about to change
  auto selected = [&](const Parameter& p) { return !p.persistent && (p.trainable || !only_trainable); };
  for (Parameter& p : parameters_)
    if (selected(p)) p.variable.impl()->data = Tensor::zeros(p.shape, p.variable.data().dtype(), Device::cpu());
  try {
    fill();
  } catch (...) {
    for (Parameter& p : parameters_)
      if (selected(p)) set_empty(p);
    throw;
  }
  for (std::size_t g = 0; g < groups_.size(); ++g)
    for (const OwnedPiece& piece : layout_.owned_pieces(g, comm_.rank())) {
      const Parameter& p = parameters_[piece.parameter];
      if (!selected(p)) continue;
      shards_[g]
          .narrow(0, piece.chunk_offset, piece.numel)
          .copy_from(flat(p.variable.data()).narrow(0, piece.parameter_offset, piece.numel));
    }
  for (Parameter& p : parameters_)
    if (selected(p)) set_empty(p);
}

std::int64_t Zero3Partitioner::held_numel() const {
  std::int64_t n = 0;
  for (const Tensor& shard : shards_) n += shard.numel();
  for (const Parameter& p : parameters_)
    if (p.persistent) n += shape_numel(p.shape);
  return n;
}

std::int64_t Zero3Partitioner::largest_module_numel() const {
  std::int64_t largest = 0;
  for (const auto& [module, groups] : module_groups_) {
    std::int64_t n = 0;
    for (std::size_t g : groups) n += layout_.buckets[g].padded_numel;
    largest = std::max(largest, n);
  }
  return largest;
}

}  // namespace zt::train
