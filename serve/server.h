// `zerotune serve`'s HTTP server: cpp-httplib on host:port with the OpenAI routes
// (routes.h) over one engine loop (engine_loop.h), until SIGINT or SIGTERM; then it stops
// accepting connections, lets the requests in flight finish, and returns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "serve/cors.h"
#include "serve/engine_loop.h"
#include "serve/engine_request.h"

namespace zt::serve {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;  // 0: a free port the system picks (printed)
  std::string api_key;
  // Connections served at once (cpp-httplib's thread per connection): enough for every
  // sequence of the batch to stream, and a few more for /health and the like.
  std::size_t http_threads = 72;
  std::size_t max_body_bytes = std::size_t{8} << 20;
  CorsOptions cors;  // vLLM's --allowed-origins and the like
};

// Prints "serve: listening on http://HOST:PORT" on stdout once requests are accepted.
// Throws zt::Error when the address cannot be bound.
void run_server(const ServedModel& model, EngineLoop& engine, const ServerOptions& options);

}  // namespace zt::serve
