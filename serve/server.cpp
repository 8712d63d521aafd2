#include "serve/server.h"

#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <iostream>
#include <memory>
#include <thread>

#include <httplib.h>

#include "runtime/error.h"
#include "runtime/log.h"
#include "runtime/stop_signals.h"
#include "serve/routes.h"

namespace zt::serve {
namespace {

// SIGINT and SIGTERM ask the server to stop (runtime/stop_signals.h: a second one ends the
// process at once); SIGPIPE (a client gone mid-write) is ignored, the write failing instead.
// The previous handlers come back when the scope ends.
class SignalScope {
 public:
  SignalScope() : previous_pipe_(std::signal(SIGPIPE, SIG_IGN)) {}
  ~SignalScope() { std::signal(SIGPIPE, previous_pipe_); }
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;

  bool stop_requested() const { return stopped_ || stop_signal_received() != 0; }
  void request_stop() { stopped_ = true; }

 private:
  StopSignalScope stop_signals_;
  std::atomic<bool> stopped_{false};
  void (*previous_pipe_)(int) = nullptr;
};

// The listen backlog cpp-httplib's library was built with (CPPHTTPLIB_LISTEN_BACKLOG, 5 in
// Debian's) is too short for many clients connecting at once: past it the kernel answers with
// SYN cookies, some of which fail once the queue has stayed full, and those clients get their
// connection reset before any request is read. So the listening socket is found as it is
// created and listen() called again with a long backlog (Linux takes a second listen() as a
// new backlog; the kernel caps it at net.core.somaxconn).
constexpr int kListenBacklog = 1024;

int bind(httplib::Server& server, const ServerOptions& options) {
  auto listening = std::make_shared<int>(-1);
  server.set_socket_options([listening](socket_t sock) {
    httplib::default_socket_options(sock);
    *listening = sock;
  });
  const int port = options.port == 0 ? server.bind_to_any_port(options.host)
                                     : (server.bind_to_port(options.host, options.port) ? options.port : -1);
  ZT_REQUIRE(port > 0, "serve: cannot listen on " + options.host + ":" + std::to_string(options.port) +
                           " (in use, or not an address of this machine): pick another --port or --host");
  if (*listening >= 0 && ::listen(*listening, kListenBacklog) != 0)
    ZT_WARN("serve: cannot lengthen the listen backlog (" << std::strerror(errno)
                                                          << "): many clients connecting at once may be reset");
  return port;
}

std::int64_t unix_time() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

void run_server(const ServedModel& model, EngineLoop& engine, const ServerOptions& options) {
  httplib::Server server;
  const std::size_t threads = options.http_threads;
  server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server.set_payload_max_length(options.max_body_bytes);
  server.set_read_timeout(std::chrono::seconds(30));
  RouteContext context{.model = model, .engine = engine, .api_key = options.api_key, .started = unix_time()};
  add_routes(server, context);
  add_cors(server, options.cors);

  SignalScope signals;
  const int port = bind(server, options);
  std::thread watcher([&server, &context, &signals] {
    while (!signals.stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    context.draining = true;
    ZT_INFO("serve: stopping: new requests refused; finishing the " << context.active << " in flight");
    while (context.active > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    server.stop();
  });
  std::cout << "serve: listening on http://" << options.host << ":" << port << std::endl;
  ZT_INFO("serve: model '" << model.name << "'" << (options.api_key.empty() ? "" : ", API key required"));
  server.listen_after_bind();  // returns once stopped, after the requests in flight are answered
  signals.request_stop();
  watcher.join();
  ZT_INFO("serve: stopped");
}

}  // namespace zt::serve
