// The few POSIX socket operations the rendezvous needs, with errors as zt::Error naming the
// address and errno's text, and file descriptors closed by RAII.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace zt::distributed {

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket();
  Socket(Socket&& other) noexcept : fd_(other.release()) {}
  Socket& operator=(Socket&& other) noexcept;
  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

// A non-blocking socket listening on address:port (the address only, never every interface).
Socket listen_on(const std::string& address, int port);
// A connected socket, or an invalid one when nothing listens there yet (connection refused).
Socket connect_to(const std::string& address, int port, std::chrono::milliseconds timeout);

// Sends all bytes or returns false (peer gone, or not drained within the timeout).
bool send_all(int fd, const std::vector<std::uint8_t>& bytes, std::chrono::milliseconds timeout);
// Reads exactly `count` bytes or returns false (closed, error or timeout).
bool receive_exactly(int fd, std::uint8_t* out, std::size_t count, std::chrono::milliseconds timeout);

void set_nonblocking(int fd);
std::string peer_name(int fd);

}  // namespace zt::distributed
