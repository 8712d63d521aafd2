// Collectives on a few integers: what ranks use to agree on sizes, flags and control words
// rather than to move tensors. `device` is where the communicator works (a GPU for NCCL, the
// CPU for Gloo; either in-process). Values pass exactly up to 2^53 in magnitude (the
// in-process communicator computes in double).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "distributed/communicator.h"

namespace zt::distributed {

// Every rank passes as many values; each gets root's.
std::vector<std::int64_t> broadcast_integers(Communicator& comm, const std::vector<std::int64_t>& values, int root,
                                             Device device);
std::int64_t broadcast_integer(Communicator& comm, std::int64_t value, int root, Device device);

// Root's `text` on every rank (what the others pass is ignored), exactly: sent as 32-bit
// words, which any communicator carries unchanged.
std::string broadcast_text(Communicator& comm, const std::string& text, int root, Device device);

std::int64_t max_over_ranks(Communicator& comm, std::int64_t value, Device device);
std::int64_t min_over_ranks(Communicator& comm, std::int64_t value, Device device);

}  // namespace zt::distributed
