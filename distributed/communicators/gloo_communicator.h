// Collectives across processes on CPU tensors through Gloo's TCP transport: what multi-process
// training runs on where there is no GPU, so the launchers and multi-process runs are tested
// on any machine. Rank 0 collects every rank's Gloo addresses at MASTER_ADDR:MASTER_PORT
// (distributed/launch/rank_exchange.h), checking the job token; then every pair of ranks connects
// directly. Each collective is bounded by the timeout (HF's --ddp_timeout): one that does not
// finish, or whose peer died, fails the rank with a message naming it, the collective, its
// size and the elapsed time, and the communicator refuses any later collective.
//
// 16-bit floats (bf16, fp16) are summed in float32 and rounded once: Gloo has no bf16 sum, and
// one rounding gives every world size the in-process communicator's result. reduce_scatter is
// an all-reduce of the whole input of which each rank keeps its slice: Gloo's reduce-scatter
// takes per-rank counts of its own layout, and on the CPU the extra traffic is acceptable.
#pragma once

#include <chrono>
#include <memory>

#include "distributed/communicator.h"
#include "distributed/launch/rendezvous.h"

namespace zt::distributed {

// Whether this build has Gloo (libgloo-dev at build time).
bool gloo_available();

// Joins the job as `rank` of rendezvous.world_size. The rank exchange is bounded by
// rendezvous.timeout, connecting and every collective by `timeout`. Gloo listens on the
// address this machine reaches MASTER_ADDR from, or on GLOO_SOCKET_IFNAME's when set. Throws
// zt::Error saying what to install when the build has no Gloo.
std::unique_ptr<Communicator> connect_gloo(int rank, const RendezvousConfig& rendezvous,
                                           std::chrono::milliseconds timeout);

}  // namespace zt::distributed
