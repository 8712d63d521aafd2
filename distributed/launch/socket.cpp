#include "distributed/launch/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/error.h"

namespace zt::distributed {
namespace {

struct AddressList {
  addrinfo* head = nullptr;
  ~AddressList() {
    if (head) freeaddrinfo(head);
  }
};

AddressList resolve(const std::string& address, int port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  AddressList list;
  int status = getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &list.head);
  ZT_REQUIRE(status == 0, "cannot resolve MASTER_ADDR " + address + ": " + gai_strerror(status));
  return list;
}

bool wait_for(int fd, short events, std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) return false;
  pollfd p{fd, events, 0};
  return poll(&p, 1, static_cast<int>(left.count())) == 1 && (p.revents & events);
}

// Moves `count` bytes with transfer(done), which sends or receives from byte `done` on and
// returns what send/recv return, waiting for `events` while the non-blocking socket would
// block. False on a closed connection, an error, or the timeout.
template <typename Transfer>
bool transfer_all(int fd, std::size_t count, short events, std::chrono::milliseconds timeout, Transfer&& transfer) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::size_t done = 0;
  while (done < count) {
    ssize_t n = transfer(done);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_for(fd, events, deadline)) return false;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

Socket::~Socket() {
  if (fd_ >= 0) close(fd_);
}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.release();
  }
  return *this;
}

void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK); }

Socket listen_on(const std::string& address, int port) {
  AddressList list = resolve(address, port, true);
  std::string last_error = "no address";
  for (addrinfo* a = list.head; a; a = a->ai_next) {
    Socket s(socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!s.valid()) continue;
    int one = 1;
    setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(s.fd(), a->ai_addr, a->ai_addrlen) == 0 && listen(s.fd(), 128) == 0) {
      set_nonblocking(s.fd());
      return s;
    }
    last_error = std::strerror(errno);
  }
  fail("rank 0 cannot listen at " + address + ":" + std::to_string(port) + " (MASTER_ADDR:MASTER_PORT): " + last_error +
       "; is the port in use by another job? Choose another --master_port");
}

Socket connect_to(const std::string& address, int port, std::chrono::milliseconds timeout) {
  AddressList list = resolve(address, port, false);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (addrinfo* a = list.head; a; a = a->ai_next) {
    Socket s(socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!s.valid()) continue;
    set_nonblocking(s.fd());
    int status = connect(s.fd(), a->ai_addr, a->ai_addrlen);
    if (status != 0 && errno != EINPROGRESS) continue;
    if (status != 0) {
      if (!wait_for(s.fd(), POLLOUT, deadline)) continue;
      int error = 0;
      socklen_t length = sizeof(error);
      getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &error, &length);
      if (error != 0) continue;
    }
    return s;
  }
  return Socket();
}

bool send_all(int fd, const std::vector<std::uint8_t>& bytes, std::chrono::milliseconds timeout) {
  return transfer_all(fd, bytes.size(), POLLOUT, timeout, [&](std::size_t sent) {
    return send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
  });
}

bool receive_exactly(int fd, std::uint8_t* out, std::size_t count, std::chrono::milliseconds timeout) {
  return transfer_all(fd, count, POLLIN, timeout, [&](std::size_t got) { return recv(fd, out + got, count - got, 0); });
}

std::string peer_name(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return "an unknown peer";
  char host[NI_MAXHOST] = {}, port[NI_MAXSERV] = {};
  getnameinfo(reinterpret_cast<sockaddr*>(&address), length, host, sizeof(host), port, sizeof(port),
              NI_NUMERICHOST | NI_NUMERICSERV);
  return std::string(host) + ":" + port;
}

}  // namespace zt::distributed
