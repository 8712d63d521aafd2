#include "infer/tensor_parallel_ranks.h"

#include <memory>

#include "distributed/communicators/inprocess_communicator.h"
#include "distributed/launch/launched_job.h"
#include "models/peft/lora.h"
#include "models/tensor_parallel.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/rank.h"

namespace zt::infer {
namespace {

// The whole model, its LoRA merged into the weights that are about to be split.
models::CausalLM load_merged(const std::function<models::CausalLM()>& load_full) {
  models::CausalLM full = load_full();
  if (!full.lora().empty()) models::merge_lora(full);
  return full;
}

void run_inprocess(const TensorParallelLaunch& launch, const std::function<models::CausalLM()>& load_full,
                   const std::function<void(TensorParallelRank&)>& body) {
  const bool on_gpu = launch.device.is_cuda();
  if (on_gpu) set_cuda_device(launch.device.index);
  std::vector<models::CausalLM> shards;
  {
    const models::CausalLM full = load_merged(load_full);
    for (int rank = 0; rank < launch.size; ++rank)
      shards.push_back(models::shard_model(full, {rank, launch.size}, launch.device));
  }  // the whole model is freed here: only the shards stay
  distributed::run_inprocess_ranks(launch.size, launch.timeout, [&](distributed::Communicator& comm) {
    if (on_gpu) set_cuda_device(launch.device.index);  // the current device is per thread
    TensorParallelRank rank{shards[static_cast<std::size_t>(comm.rank())], comm, on_gpu ? launch.size : 1};
    body(rank);
  });
}

Device launched_rank_device(const TensorParallelLaunch& launch, const ProcessRank& process) {
  if (launch.device.is_cpu()) return Device::cpu();
  ZT_REQUIRE(process.local_rank < cuda_device_count(), "rank " + std::to_string(process.rank) + " has LOCAL_RANK " +
                                                           std::to_string(process.local_rank) + " but " +
                                                           std::to_string(cuda_device_count()) +
                                                           " GPU(s) are visible: each rank needs its own GPU; "
                                                           "check CUDA_VISIBLE_DEVICES and --nproc_per_node");
  set_cuda_device(process.local_rank);
  return Device::cuda(process.local_rank);
}

void run_launched(const TensorParallelLaunch& launch, const std::function<models::CausalLM()>& load_full,
                  const std::function<void(TensorParallelRank&)>& body) {
  const ProcessRank process = rank_from_environment();
  const std::string n = std::to_string(launch.size);
  ZT_REQUIRE(process.world_size == launch.size,
             "--tp " + n + ", but the launcher started " + std::to_string(process.world_size) +
                 " process(es) (WORLD_SIZE): tensor parallelism runs one rank per process, so start " + n +
                 " processes (zerotune launch --nproc_per_node " + n + " ...), or run without a launcher for " + n +
                 " in-process ranks on one device");
  const Device device = launched_rank_device(launch, process);
  std::unique_ptr<distributed::Communicator> comm =
      distributed::connect_launched_rank(process, device.is_cpu(), launch.timeout);
  models::CausalLM shard = models::shard_model(load_merged(load_full), {process.rank, launch.size}, device);
  TensorParallelRank rank{shard, *comm, 1};
  body(rank);
}

}  // namespace

bool launched_as_ranks() { return rank_from_environment().distributed; }

void run_tensor_parallel(const TensorParallelLaunch& launch, const std::function<models::CausalLM()>& load_full,
                         const std::function<void(TensorParallelRank& rank)>& body) {
  ZT_REQUIRE(launch.size >= 1, "--tp must be at least 1, got " + std::to_string(launch.size));
  if (launched_as_ranks())
    run_launched(launch, load_full, body);
  else
    run_inprocess(launch, load_full, body);
}

}  // namespace zt::infer
