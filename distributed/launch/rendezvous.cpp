#include "distributed/launch/rendezvous.h"

#include <cstdlib>
#include <set>
#include <thread>

#include "distributed/launch/peer_server.h"
#include "distributed/launch/rendezvous_wire.h"
#include "distributed/launch/socket.h"
#include "runtime/error.h"
#include "runtime/log.h"

namespace zt::distributed {
namespace {

using Clock = std::chrono::steady_clock;

// Parses what the peer has sent; returns true when it is finished with (served or dropped).
bool serve_peer(Peer& peer, const RendezvousConfig& config, const std::vector<std::uint8_t>& reply,
                std::set<int>& served) {
  if (peer.received.size() < wire::kRequestHeaderBytes) return false;
  auto token_length = wire::announced_token_length(peer.received.data(), kMaxTokenBytes);
  const std::string name = peer_name(peer.socket.fd());
  if (!token_length) {
    ZT_LOG(kWarn, "rendezvous at " << where(config) << ": dropped a malformed request from " << name);
    return true;
  }
  const std::size_t total = wire::kRequestHeaderBytes + *token_length;
  if (peer.received.size() < total) return false;
  if (peer.received.size() > total) {
    ZT_LOG(kWarn, "rendezvous at " << where(config) << ": dropped an oversized request from " << name);
    return true;
  }
  wire::Request request = wire::decode_request(peer.received.data(), *token_length);
  const int rank = static_cast<int>(request.rank);
  if (!same_token(request.token, config.token)) {
    ZT_LOG(kWarn, "rendezvous at " << where(config) << ": dropped " << name << ": wrong job token");
    return true;
  }
  if (static_cast<int>(request.world_size) != config.world_size || rank < 1 || rank >= config.world_size) {
    ZT_LOG(kWarn, "rendezvous at " << where(config) << ": dropped " << name << " claiming rank " << rank << " of "
                                   << request.world_size << " (this job has world size " << config.world_size << ")");
    return true;
  }
  if (send_all(peer.socket.fd(), reply, config.peer_timeout)) served.insert(rank);
  return true;
}

}  // namespace

void serve_rendezvous(const RendezvousConfig& config, const std::vector<std::uint8_t>& payload) {
  ZT_REQUIRE(payload.size() <= kMaxPayloadBytes, "rendezvous payload too large");
  ZT_REQUIRE(config.token.size() <= kMaxTokenBytes,
             "the job token is longer than " + std::to_string(kMaxTokenBytes) + " bytes");
  if (config.world_size <= 1) return;
  Socket listener = listen_on(config.address, config.port);
  const std::vector<std::uint8_t> reply = wire::encode_reply(payload);
  std::set<int> served;
  serve_ranks(
      listener, config, "rendezvous", "and share this job's token (ZT_JOB_TOKEN)",
      [&](int rank) { return served.count(rank) > 0; },
      [&](Peer& peer) { return serve_peer(peer, config, reply, served); });
}

std::vector<std::uint8_t> join_rendezvous(const RendezvousConfig& config, int rank) {
  const auto deadline = Clock::now() + config.timeout;
  const std::vector<std::uint8_t> request = wire::encode_request(
      {static_cast<std::uint32_t>(rank), static_cast<std::uint32_t>(config.world_size), config.token});
  while (true) {
    ZT_REQUIRE(Clock::now() < deadline, "rank " + std::to_string(rank) + ": no rendezvous with rank 0 at " +
                                            where(config) + " within " + seconds(config.timeout) +
                                            "; check MASTER_ADDR/MASTER_PORT and that rank 0 started");
    Socket socket = connect_to(config.address, config.port, config.peer_timeout);
    if (!socket.valid()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    std::uint8_t header[8];
    if (!send_all(socket.fd(), request, config.peer_timeout) ||
        !receive_exactly(socket.fd(), header, sizeof(header), config.peer_timeout)) {
      fail("rank " + std::to_string(rank) + ": rank 0 at " + where(config) +
           " closed the rendezvous without an answer: the job token (ZT_JOB_TOKEN) or the world size (" +
           std::to_string(config.world_size) + ") differs from rank 0's, or another service listens there");
    }
    const std::size_t length = wire::get_u32(header + 4);
    ZT_REQUIRE(std::string(header, header + 4) == "ZTOK" && length <= kMaxPayloadBytes,
               "rank " + std::to_string(rank) + ": " + where(config) + " answered, but not as a zerotune rendezvous");
    std::vector<std::uint8_t> payload(length);
    ZT_REQUIRE(receive_exactly(socket.fd(), payload.data(), length, config.peer_timeout),
               "rank " + std::to_string(rank) + ": the rendezvous answer from " + where(config) + " was cut short");
    return payload;
  }
}

std::string job_token_from_environment() {
  for (const char* name : {"ZT_JOB_TOKEN", "TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "OMPI_MCA_ess_base_jobid"})
    if (const char* value = std::getenv(name); value && *value) return value;
  return "";
}

}  // namespace zt::distributed
