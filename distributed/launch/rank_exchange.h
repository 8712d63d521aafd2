// Every rank hands rank 0 a small blob and gets back everyone's, in rank order: how the
// ranks of a Gloo job learn each other's listening addresses. It runs where the NCCL
// rendezvous runs (rank 0 at MASTER_ADDR:MASTER_PORT) and is hardened the same way: it binds
// only the given address, admits a peer only with this job's token, bounds every message and
// every wait, and drops anything malformed without crashing. Unlike the rendezvous, rank 0
// answers only once every rank has posted, so the answer is the whole table.
#pragma once

#include <cstdint>
#include <vector>

#include "distributed/launch/rendezvous.h"

namespace zt::distributed {

inline constexpr std::size_t kMaxExchangeBlobBytes = 256 * 1024;

// Returns world_size blobs, blob r from rank r (this rank's own among them). Rank 0 serves
// until every rank has its answer; the others connect, retrying while rank 0 is not
// listening yet. Throws zt::Error naming the missing ranks, or rank 0's address, when
// config.timeout passes.
std::vector<std::vector<std::uint8_t>> exchange_with_all_ranks(const RendezvousConfig& config, int rank,
                                                               const std::vector<std::uint8_t>& blob);

}  // namespace zt::distributed
