// On the wire, fixed little-endian fields:
//   post:   "ZTGX" | version u32 | rank u32 | world_size u32 | token length u32 | blob length u32 | token | blob
//   answer: "ZTOK" | table length u32 | table, the table being (length u32 | blob) for ranks 0 .. world_size - 1.
#include "distributed/launch/rank_exchange.h"

#include <cstring>
#include <map>
#include <optional>
#include <thread>

#include "distributed/launch/peer_server.h"
#include "distributed/launch/rendezvous_wire.h"
#include "distributed/launch/socket.h"
#include "runtime/error.h"
#include "runtime/log.h"

namespace zt::distributed {
namespace {

using Clock = std::chrono::steady_clock;
using Blobs = std::vector<std::vector<std::uint8_t>>;

constexpr std::uint32_t kVersion = 1;
constexpr std::size_t kPostHeaderBytes = 24;

struct Post {
  int rank = 0;
  int world_size = 0;
  std::string token;
  std::vector<std::uint8_t> blob;
};

std::vector<std::uint8_t> encode_post(const RendezvousConfig& config, int rank, const std::vector<std::uint8_t>& blob) {
  std::vector<std::uint8_t> out = {'Z', 'T', 'G', 'X'};
  wire::put_u32(out, kVersion);
  wire::put_u32(out, static_cast<std::uint32_t>(rank));
  wire::put_u32(out, static_cast<std::uint32_t>(config.world_size));
  wire::put_u32(out, static_cast<std::uint32_t>(config.token.size()));
  wire::put_u32(out, static_cast<std::uint32_t>(blob.size()));
  out.insert(out.end(), config.token.begin(), config.token.end());
  out.insert(out.end(), blob.begin(), blob.end());
  return out;
}

// The whole post's size announced by a complete header, or nullopt when the header is not
// one of ours or announces more than the limits.
std::optional<std::size_t> announced_post_bytes(const std::uint8_t* header) {
  if (std::memcmp(header, "ZTGX", 4) != 0 || wire::get_u32(header + 4) != kVersion) return std::nullopt;
  const std::size_t token = wire::get_u32(header + 16), blob = wire::get_u32(header + 20);
  if (token > kMaxTokenBytes || blob > kMaxExchangeBlobBytes) return std::nullopt;
  return kPostHeaderBytes + token + blob;
}

Post decode_post(const std::vector<std::uint8_t>& bytes) {
  const std::size_t token = wire::get_u32(bytes.data() + 16);
  Post post;
  post.rank = static_cast<int>(wire::get_u32(bytes.data() + 8));
  post.world_size = static_cast<int>(wire::get_u32(bytes.data() + 12));
  post.token.assign(bytes.begin() + kPostHeaderBytes,
                    bytes.begin() + static_cast<std::ptrdiff_t>(kPostHeaderBytes + token));
  post.blob.assign(bytes.begin() + static_cast<std::ptrdiff_t>(kPostHeaderBytes + token), bytes.end());
  return post;
}

std::vector<std::uint8_t> encode_answer(const Blobs& blobs) {
  std::vector<std::uint8_t> table;
  for (const auto& blob : blobs) {
    wire::put_u32(table, static_cast<std::uint32_t>(blob.size()));
    table.insert(table.end(), blob.begin(), blob.end());
  }
  return wire::encode_reply(table);
}

std::optional<Blobs> decode_table(const std::vector<std::uint8_t>& table, int world_size) {
  Blobs blobs;
  std::size_t at = 0;
  while (static_cast<int>(blobs.size()) < world_size) {
    if (table.size() - at < 4) return std::nullopt;
    const std::size_t length = wire::get_u32(table.data() + at);
    at += 4;
    if (table.size() - at < length) return std::nullopt;
    blobs.emplace_back(table.begin() + static_cast<std::ptrdiff_t>(at),
                       table.begin() + static_cast<std::ptrdiff_t>(at + length));
    at += length;
  }
  if (at != table.size()) return std::nullopt;
  return blobs;
}

// Parses what the peer has sent; returns true when rank 0 is finished with it: dropped, or
// its post accepted (its socket then waits in `posted` for the answer).
bool read_post(Peer& peer, const RendezvousConfig& config, Blobs& blobs, std::map<int, Socket>& posted) {
  if (peer.received.size() < kPostHeaderBytes) return false;
  const std::string name = peer_name(peer.socket.fd());
  const auto total = announced_post_bytes(peer.received.data());
  if (!total) {
    const bool nccl_rank = std::memcmp(peer.received.data(), "ZTRV", 4) == 0;
    ZT_LOG(kWarn, "rank 0 at " << where(config) << ": dropped " << name
                               << (nccl_rank ? ", a rank asking for NCCL's id: every rank must run on the CPU "
                                               "(Gloo) or every rank on a GPU (NCCL)"
                                             : ": a malformed or oversized request"));
    return true;
  }
  if (peer.received.size() < *total) return false;
  if (peer.received.size() > *total) {
    ZT_LOG(kWarn, "rank 0 at " << where(config) << ": dropped an oversized request from " << name);
    return true;
  }
  Post post = decode_post(peer.received);
  if (!same_token(post.token, config.token)) {
    ZT_LOG(kWarn, "rank 0 at " << where(config) << ": dropped " << name << ": wrong job token");
    return true;
  }
  if (post.world_size != config.world_size || post.rank < 1 || post.rank >= config.world_size) {
    ZT_LOG(kWarn, "rank 0 at " << where(config) << ": dropped " << name << " claiming rank " << post.rank << " of "
                               << post.world_size << " (this job has world size " << config.world_size << ")");
    return true;
  }
  blobs[static_cast<std::size_t>(post.rank)] = std::move(post.blob);
  posted[post.rank] = std::move(peer.socket);  // a rank that came again replaces its first post
  return true;
}

Blobs serve_exchange(const RendezvousConfig& config, const std::vector<std::uint8_t>& blob) {
  Socket listener = listen_on(config.address, config.port);
  Blobs blobs(static_cast<std::size_t>(config.world_size));
  blobs[0] = blob;
  std::map<int, Socket> posted;
  serve_ranks(
      listener, config, "the rank exchange", "share this job's token (ZT_JOB_TOKEN) and run on the CPU too",
      [&](int rank) { return posted.count(rank) > 0; },
      [&](Peer& peer) { return read_post(peer, config, blobs, posted); });
  // A rank that left since posting fails on its own side; the others go on.
  const std::vector<std::uint8_t> answer = encode_answer(blobs);
  for (auto& [rank, socket] : posted) send_all(socket.fd(), answer, config.peer_timeout);
  return blobs;
}

Blobs join_exchange(const RendezvousConfig& config, int rank, const std::vector<std::uint8_t>& blob) {
  const auto deadline = Clock::now() + config.timeout;
  const std::vector<std::uint8_t> post = encode_post(config, rank, blob);
  const std::string me = "rank " + std::to_string(rank);
  Socket socket;
  while (!socket.valid()) {
    ZT_REQUIRE(Clock::now() < deadline, me + ": no rank 0 at " + where(config) + " within " + seconds(config.timeout) +
                                            "; check MASTER_ADDR/MASTER_PORT and that rank 0 started");
    socket = connect_to(config.address, config.port, config.peer_timeout);
    if (!socket.valid()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // Rank 0 answers once every rank has posted, so the wait lasts until the deadline.
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  std::uint8_t header[8];
  if (!send_all(socket.fd(), post, config.peer_timeout) || !receive_exactly(socket.fd(), header, sizeof(header), left))
    fail(me + ": rank 0 at " + where(config) + " gave no answer within " + seconds(config.timeout) +
         ": another rank never joined, or this job token (ZT_JOB_TOKEN) or world size (" +
         std::to_string(config.world_size) + ") differs from rank 0's, or rank 0 runs on a GPU (NCCL)");
  const std::size_t length = wire::get_u32(header + 4);
  const std::size_t most = static_cast<std::size_t>(config.world_size) * (4 + kMaxExchangeBlobBytes);
  ZT_REQUIRE(std::memcmp(header, "ZTOK", 4) == 0 && length <= most,
             me + ": " + where(config) + " answered, but not as a zerotune rank 0");
  std::vector<std::uint8_t> table(length);
  ZT_REQUIRE(receive_exactly(socket.fd(), table.data(), length, config.peer_timeout),
             me + ": the answer from rank 0 at " + where(config) + " was cut short");
  std::optional<Blobs> blobs = decode_table(table, config.world_size);
  ZT_REQUIRE(blobs.has_value(), me + ": rank 0 at " + where(config) + " answered with a malformed table");
  return *blobs;
}

}  // namespace

Blobs exchange_with_all_ranks(const RendezvousConfig& config, int rank, const std::vector<std::uint8_t>& blob) {
  ZT_REQUIRE(rank >= 0 && rank < config.world_size,
             "rank " + std::to_string(rank) + " is outside world size " + std::to_string(config.world_size));
  ZT_REQUIRE(blob.size() <= kMaxExchangeBlobBytes, "rank " + std::to_string(rank) + ": exchange blob of " +
                                                       std::to_string(blob.size()) + " bytes exceeds the limit of " +
                                                       std::to_string(kMaxExchangeBlobBytes));
  ZT_REQUIRE(config.token.size() <= kMaxTokenBytes,
             "the job token is longer than " + std::to_string(kMaxTokenBytes) + " bytes");
  if (config.world_size == 1) return {blob};
  return rank == 0 ? serve_exchange(config, blob) : join_exchange(config, rank, blob);
}

}  // namespace zt::distributed
