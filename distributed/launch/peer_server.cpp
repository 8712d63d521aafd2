#include "distributed/launch/peer_server.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <deque>

#include "runtime/error.h"

namespace zt::distributed {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kMaxPendingPeers = 64;

// Appends what has arrived; false when the connection is closed or failed.
bool receive_more(Peer& peer) {
  std::uint8_t chunk[4096];
  ssize_t n = recv(peer.socket.fd(), chunk, sizeof(chunk), 0);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) return false;
  if (n > 0) peer.received.insert(peer.received.end(), chunk, chunk + n);
  return true;
}

}  // namespace

std::string where(const RendezvousConfig& config) { return config.address + ":" + std::to_string(config.port); }

std::string seconds(std::chrono::milliseconds duration) { return std::to_string(duration.count() / 1000.0) + " s"; }

bool same_token(const std::string& a, const std::string& b) {
  // Compares every byte whatever the first difference, so timing does not leak the token.
  unsigned difference = a.size() == b.size() ? 0u : 1u;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) difference |= static_cast<unsigned>(a[i] ^ b[i]);
  return difference == 0;
}

std::string missing_ranks(int world_size, const std::function<bool(int)>& has_rank) {
  std::string missing;
  for (int r = 1; r < world_size; ++r)
    if (!has_rank(r)) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
  return missing;
}

void serve_peers(const Socket& listener, std::chrono::milliseconds peer_timeout, const std::function<bool()>& done,
                 const std::function<void()>& check, const std::function<bool(Peer&)>& parse) {
  std::deque<Peer> peers;
  while (!done()) {
    check();
    std::vector<pollfd> fds = {{listener.fd(), POLLIN, 0}};
    for (const Peer& peer : peers) fds.push_back({peer.socket.fd(), POLLIN, 0});
    poll(fds.data(), fds.size(), 100);
    for (std::size_t i = peers.size(); i > 0; --i) {
      Peer& peer = peers[i - 1];
      const bool finished = (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) && (!receive_more(peer) || parse(peer));
      if (finished || Clock::now() > peer.deadline) peers.erase(peers.begin() + static_cast<std::ptrdiff_t>(i - 1));
    }
    if (fds[0].revents & POLLIN) {
      for (int fd; (fd = accept4(listener.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0;) {
        if (peers.size() >= kMaxPendingPeers) peers.pop_front();  // a flood must not starve the real ranks
        peers.push_back({Socket(fd), {}, Clock::now() + peer_timeout});
      }
    }
  }
}

void serve_ranks(const Socket& listener, const RendezvousConfig& config, const std::string& what,
                 const std::string& checks, const std::function<bool(int)>& has_joined,
                 const std::function<bool(Peer&)>& parse) {
  const auto deadline = Clock::now() + config.timeout;
  serve_peers(
      listener, config.peer_timeout, [&] { return missing_ranks(config.world_size, has_joined).empty(); },
      [&] {
        ZT_REQUIRE(Clock::now() < deadline, "rank 0: " + what + " at " + where(config) + " timed out after " +
                                                seconds(config.timeout) + "; rank(s) " +
                                                missing_ranks(config.world_size, has_joined) +
                                                " never joined. Check that they were started, reach "
                                                "MASTER_ADDR:MASTER_PORT, " +
                                                checks);
      },
      parse);
}

}  // namespace zt::distributed
