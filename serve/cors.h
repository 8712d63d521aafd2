// Cross-origin requests (CORS), so that a page of another origin (Open WebUI, a web app) can
// call the server from a browser, as vLLM allows them: its --allowed-origins,
// --allowed-methods, --allowed-headers and --allow-credentials configure Starlette's
// CORSMiddleware, whose answers these are. A request without an Origin header gets no CORS
// headers. A preflight (OPTIONS with Access-Control-Request-Method), on any path, is answered
// 200 "OK" with Access-Control-Allow-Methods, -Headers, -Max-Age (600) and the origin, or 400
// "Disallowed CORS origin|method|headers" naming what is not allowed. Every other response
// (errors and streams included) carries Access-Control-Allow-Origin: `*` when every origin is
// allowed, else the request's origin when it is allowed (with Vary: Origin), nothing when not.
#pragma once

#include <string>
#include <vector>

namespace httplib {
class Server;
}

namespace zt::serve {

struct CorsOptions {
  std::vector<std::string> allowed_origins{"*"};  // "*": any
  std::vector<std::string> allowed_methods{"*"};  // "*": DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT
  std::vector<std::string> allowed_headers{"*"};  // "*": any (the requested ones echoed)
  bool allow_credentials = false;  // Access-Control-Allow-Credentials: true; the origin echoed even under "*"
};

// A flag's list as vLLM takes it, a JSON list of strings ('["http://a.example", "*"]'), or
// as words joined by commas ("http://a.example,http://b.example"). Throws zt::Error naming
// `flag` for a malformed list.
std::vector<std::string> cors_list(const std::string& text, const std::string& flag);

// Answers preflights and adds the headers to every response of `server` (its pre- and
// post-routing handlers, which nothing else sets).
void add_cors(httplib::Server& server, const CorsOptions& options);

}  // namespace zt::serve
