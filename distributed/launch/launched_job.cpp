#include "distributed/launch/launched_job.h"

#include <cstdlib>
#include <string>

#include "distributed/communicators/gloo_communicator.h"
#include "distributed/communicators/nccl_communicator.h"

namespace zt::distributed {

RendezvousConfig rendezvous_from_environment(const ProcessRank& rank, std::chrono::milliseconds timeout) {
  RendezvousConfig rendezvous;
  const char* addr = std::getenv("MASTER_ADDR");
  const char* port = std::getenv("MASTER_PORT");
  rendezvous.address = addr ? addr : "127.0.0.1";
  rendezvous.port = port ? std::stoi(port) : 29500;
  rendezvous.token = job_token_from_environment();
  rendezvous.world_size = rank.world_size;
  rendezvous.timeout = timeout;
  return rendezvous;
}

std::unique_ptr<Communicator> connect_launched_rank(const ProcessRank& rank, bool on_cpu,
                                                    std::chrono::milliseconds timeout) {
  const RendezvousConfig rendezvous = rendezvous_from_environment(rank, timeout);
  if (on_cpu) return connect_gloo(rank.rank, rendezvous, timeout);
  return std::make_unique<NcclCommunicator>(rank.rank, rendezvous, timeout);
}

}  // namespace zt::distributed
