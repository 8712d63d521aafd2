// A frozen model under ZeRO-3: the reference model of preference training with full
// fine-tuning (train/preference/), partitioned like the policy so that no rank holds it whole.
// Every parameter is frozen, so the partitioner's flat groups are all frozen ones: each rank
// keeps its shards (in host memory under offload_param) and a forward gathers one module at a
// time, as evaluation of the policy does. The copy must be loaded the same on every rank; it is
// whole only until this call partitions it.
#pragma once

#include <memory>

#include "distributed/communicator.h"
#include "models/model.h"
#include "train/zero/zero_config.h"

namespace zt::train {

// `copy` partitioned over `communicator` with `zero`'s persistence threshold, prefetch limits
// and parameter offload; the model keeps its partitioner alive. Collective: every rank calls it.
std::shared_ptr<const models::CausalLM> partition_frozen_copy(models::CausalLM copy,
                                                              distributed::Communicator& communicator,
                                                              const ZeroConfig& zero);

}  // namespace zt::train
