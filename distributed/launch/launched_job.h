// How a process that a launcher started (zerotune launch, torchrun, mpirun, srun) joins the
// collectives of its job: the rendezvous at MASTER_ADDR:MASTER_PORT with the job's token, then
// NCCL between GPUs or Gloo between CPU processes. Training and tensor-parallel generation
// both start their ranks this way.
#pragma once

#include <chrono>
#include <memory>

#include "distributed/communicator.h"
#include "distributed/launch/rendezvous.h"
#include "runtime/rank.h"

namespace zt::distributed {

// MASTER_ADDR (default 127.0.0.1), MASTER_PORT (default 29500), the job token of the
// environment, rank.world_size ranks, the whole rendezvous bounded by `timeout`.
RendezvousConfig rendezvous_from_environment(const ProcessRank& rank, std::chrono::milliseconds timeout);

// Joins the job as rank.rank: over NCCL on the current CUDA device (set it to the rank's GPU
// first), or over Gloo when `on_cpu`. `timeout` bounds the rendezvous and every collective.
std::unique_ptr<Communicator> connect_launched_rank(const ProcessRank& rank, bool on_cpu,
                                                    std::chrono::milliseconds timeout);

}  // namespace zt::distributed
