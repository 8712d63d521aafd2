// The HTTP routes on a cpp-httplib server: the chat page at GET / (chat_page.h), and the
// OpenAI API: GET /health, GET /v1/models, POST /v1/chat/completions and POST
// /v1/completions (generation_route.h), behind the API key when one is set, with every
// failure answered as an OpenAI error body (a route asked with a method it does not take:
// 405 with Allow).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include <httplib.h>

#include "serve/engine_loop.h"
#include "serve/engine_request.h"

namespace zt::serve {

struct RouteContext {
  const ServedModel& model;
  EngineLoop& engine;
  std::string api_key;       // empty: no key needed
  std::int64_t started = 0;  // unix time, GET /v1/models' "created"
  // Stopping: generation requests are refused (503) and the server waits for `active`, the
  // answers being generated or sent, to reach 0 (cpp-httplib cuts open streams when stopped).
  std::atomic<bool> draining{false};
  std::atomic<int> active{0};
};

void add_routes(httplib::Server& server, RouteContext& context);

}  // namespace zt::serve
