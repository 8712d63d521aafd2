// What rank 0's two servers share (rendezvous.cpp hands out NCCL's id, rank_exchange.cpp the
// CPU ranks' blobs): many connections read at once with poll, each bounded by its own
// deadline and their number capped, so neither a silent nor a flooding client starves the
// real ranks; and the checks and messages about the job's ranks.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "distributed/launch/rendezvous.h"
#include "distributed/launch/socket.h"

namespace zt::distributed {

// One connection being read by rank 0.
struct Peer {
  Socket socket;
  std::vector<std::uint8_t> received;
  std::chrono::steady_clock::time_point deadline;
};

// MASTER_ADDR:MASTER_PORT, and a timeout in seconds, for messages.
std::string where(const RendezvousConfig& config);
std::string seconds(std::chrono::milliseconds duration);

// Whether two job tokens are equal; the time taken does not depend on where they differ.
bool same_token(const std::string& a, const std::string& b);

// The ranks 1 .. world_size - 1 that has_rank rejects, as "1, 3".
std::string missing_ranks(int world_size, const std::function<bool(int)>& has_rank);

// Accepts connections on `listener` and reads them until done(). Whenever bytes arrive from a
// peer, parse(peer) sees everything it has sent so far and returns true once rank 0 is
// finished with it (served or dropped). A peer that closes, fails, or outlives peer_timeout is
// dropped. check() runs before every round and throws when the whole wait is over.
void serve_peers(const Socket& listener, std::chrono::milliseconds peer_timeout, const std::function<bool()>& done,
                 const std::function<void()>& check, const std::function<bool(Peer&)>& parse);

// serve_peers on `listener` until has_joined(r) holds for every rank 1 .. world_size - 1 (parse
// records them). Past config.timeout it throws "rank 0: <what> at <where> timed out ...",
// naming the ranks that never joined and what to check: that they were started, reach
// MASTER_ADDR:MASTER_PORT, and then `checks`.
void serve_ranks(const Socket& listener, const RendezvousConfig& config, const std::string& what,
                 const std::string& checks, const std::function<bool(int)>& has_joined,
                 const std::function<bool(Peer&)>& parse);

}  // namespace zt::distributed
