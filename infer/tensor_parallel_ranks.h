// Where the N ranks of tensor-parallel generation run. Without a launcher: N in-process
// ranks (threads) on one device — the CPU or one GPU that they share — which give the same
// tokens as one rank and no speed-up: for tests, and for watching the scheme work. Under a
// launcher (zerotune launch --nproc_per_node N, torchrun, mpirun, srun), this process is one
// rank of N: its shard on the GPU of its local rank, collectives over NCCL (Gloo with --device
// cpu), joined as training joins (distributed/launch/launched_job.h).
#pragma once

#include <chrono>
#include <functional>

#include "distributed/communicator.h"
#include "models/model.h"

namespace zt::infer {

struct TensorParallelLaunch {
  int size = 2;  // N, the ranks the model is split over
  // In-process ranks: every rank's device. Launched ranks: cuda means each rank's local GPU.
  Device device = Device::cpu();
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};  // any one collective
};

// What one rank is given: its shard (no reducer set yet) and the communicator of the ranks.
struct TensorParallelRank {
  models::CausalLM& shard;
  distributed::Communicator& comm;
  int ranks_per_device = 1;  // for TensorParallelOptions
};

// Whether a launcher started this process as one of several ranks.
bool launched_as_ranks();

// Loads the whole model with `load_full` (on the CPU, once per process; a LoRA is merged
// before it is split), builds each rank's shard on its device, frees the whole model, and
// runs `body` on every rank; an error on any rank ends every rank and is thrown here. Under a
// launcher WORLD_SIZE must equal launch.size.
void run_tensor_parallel(const TensorParallelLaunch& launch, const std::function<models::CausalLM()>& load_full,
                         const std::function<void(TensorParallelRank& rank)>& body);

}  // namespace zt::infer
