#include "serve/server.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <thread>

#include <httplib.h>

#include "runtime/error.h"
#include "runtime/log.h"
#include "serve/routes.h"

namespace zt::serve {
namespace {

std::atomic<bool> stop_requested{false};

extern "C" void on_stop_signal(int) { stop_requested = true; }

// SIGINT and SIGTERM ask the server to stop; SIGPIPE (a client gone mid-write) is ignored,
// the write failing instead. The previous handlers come back when the scope ends.
class SignalScope {
 public:
  SignalScope() {
    stop_requested = false;
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &previous_int_);
    sigaction(SIGTERM, &action, &previous_term_);
    previous_pipe_ = std::signal(SIGPIPE, SIG_IGN);
  }
  ~SignalScope() {
    sigaction(SIGINT, &previous_int_, nullptr);
    sigaction(SIGTERM, &previous_term_, nullptr);
    std::signal(SIGPIPE, previous_pipe_);
  }

 private:
  struct sigaction previous_int_ {
  }, previous_term_{};
  void (*previous_pipe_)(int) = nullptr;
};

int bind(httplib::Server& server, const ServerOptions& options) {
  const int port = options.port == 0 ? server.bind_to_any_port(options.host)
                                     : (server.bind_to_port(options.host, options.port) ? options.port : -1);
  ZT_REQUIRE(port > 0, "serve: cannot listen on " + options.host + ":" + std::to_string(options.port) +
                           " (in use, or not an address of this machine): pick another --port or --host");
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

  SignalScope signals;
  const int port = bind(server, options);
  std::thread watcher([&server, &context] {
    while (!stop_requested) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    context.draining = true;
    ZT_INFO("serve: stopping: new requests refused; finishing the " << context.active << " in flight");
    while (context.active > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    server.stop();
  });
  std::cout << "serve: listening on http://" << options.host << ":" << port << std::endl;
  ZT_INFO("serve: model '" << model.name << "'" << (options.api_key.empty() ? "" : ", API key required"));
  server.listen_after_bind();  // returns once stopped, after the requests in flight are answered
  stop_requested = true;
  watcher.join();
  ZT_INFO("serve: stopped");
}

}  // namespace zt::serve
