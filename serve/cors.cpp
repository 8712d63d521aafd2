#include "serve/cors.h"

#include <algorithm>
#include <memory>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "runtime/ascii_lower.h"
#include "runtime/error.h"
#include "runtime/terminal/text_list.h"

namespace zt::serve {
namespace {

bool contains(const std::vector<std::string>& list, const std::string& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

std::string trimmed(const std::string& text) {
  const std::size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t") - begin + 1);
}

// Starlette's CORSMiddleware, configured as vLLM configures it.
class Cors {
 public:
  explicit Cors(const CorsOptions& options)
      : allow_all_origins_(contains(options.allowed_origins, "*")),
        allow_all_headers_(contains(options.allowed_headers, "*")),
        allow_credentials_(options.allow_credentials),
        origins_(options.allowed_origins),
        methods_(contains(options.allowed_methods, "*")
                     ? std::vector<std::string>{"DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT"}
                     : options.allowed_methods) {
    // The CORS-safelisted request headers are always allowed; the list is sorted, as Starlette's.
    std::vector<std::string> headers = {"Accept", "Accept-Language", "Content-Language", "Content-Type"};
    for (const std::string& header : options.allowed_headers)
      if (!contains(headers, header)) headers.push_back(header);
    std::sort(headers.begin(), headers.end());
    headers_ = headers;
    for (const std::string& header : headers) lower_headers_.push_back(ascii_lower(header));
  }

  // A preflight: answered here, whatever the path.
  void preflight(const httplib::Request& request, httplib::Response& response) const {
    const std::string origin = request.get_header_value("Origin");
    const std::string method = request.get_header_value("Access-Control-Request-Method");
    std::vector<std::string> failures;
    if (!explicit_origin())
      response.set_header("Access-Control-Allow-Origin", "*");
    else
      response.set_header("Vary", "Origin");
    response.set_header("Access-Control-Allow-Methods", join_list(methods_));
    response.set_header("Access-Control-Max-Age", "600");
    if (!allow_all_headers_) response.set_header("Access-Control-Allow-Headers", join_list(headers_));
    if (allow_credentials_) response.set_header("Access-Control-Allow-Credentials", "true");
    if (allowed_origin(origin)) {
      if (explicit_origin()) response.set_header("Access-Control-Allow-Origin", origin);
    } else {
      failures.push_back("origin");
    }
    if (!contains(methods_, method)) failures.push_back("method");
    if (request.has_header("Access-Control-Request-Headers")) {
      const std::string requested = request.get_header_value("Access-Control-Request-Headers");
      if (allow_all_headers_) {
        response.set_header("Access-Control-Allow-Headers", requested);
      } else {
        std::size_t begin = 0;
        while (begin <= requested.size()) {
          const std::size_t end = std::min(requested.find(',', begin), requested.size());
          if (!contains(lower_headers_, ascii_lower(trimmed(requested.substr(begin, end - begin))))) {
            failures.push_back("headers");
            break;
          }
          begin = end + 1;
        }
      }
    }
    response.status = failures.empty() ? 200 : 400;
    response.set_content(failures.empty() ? "OK" : "Disallowed CORS " + join_list(failures),
                         "text/plain; charset=utf-8");
  }

  // Any other response to a request with an Origin.
  void simple(const httplib::Request& request, httplib::Response& response) const {
    const std::string origin = request.get_header_value("Origin");
    if (allow_credentials_) response.set_header("Access-Control-Allow-Credentials", "true");
    // A request with cookies needs its origin named rather than "*".
    const bool echo = allow_all_origins_ ? request.has_header("Cookie") : allowed_origin(origin);
    if (echo) {
      response.set_header("Access-Control-Allow-Origin", origin);
      response.set_header("Vary", "Origin");
    } else if (allow_all_origins_) {
      response.set_header("Access-Control-Allow-Origin", "*");
    }
  }

 private:
  // Whether a preflight names the origin rather than "*".
  bool explicit_origin() const { return !allow_all_origins_ || allow_credentials_; }
  bool allowed_origin(const std::string& origin) const { return allow_all_origins_ || contains(origins_, origin); }

  bool allow_all_origins_, allow_all_headers_, allow_credentials_;
  std::vector<std::string> origins_, methods_, headers_, lower_headers_;
};

}  // namespace

std::vector<std::string> cors_list(const std::string& text, const std::string& flag) {
  std::vector<std::string> words;
  if (trimmed(text).starts_with("[")) {
    const nlohmann::json list = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    ZT_REQUIRE(list.is_array() && std::all_of(list.begin(), list.end(), [](const auto& v) { return v.is_string(); }),
               flag + " must be a JSON list of strings (as vLLM takes it) or words joined by commas, got " + text);
    for (const auto& word : list) words.push_back(word.get<std::string>());
    return words;
  }
  return split_comma_list(text);
}

void add_cors(httplib::Server& server, const CorsOptions& options) {
  auto cors = std::make_shared<const Cors>(options);
  server.set_pre_routing_handler([cors](const httplib::Request& request, httplib::Response& response) {
    if (request.method != "OPTIONS" || !request.has_header("Origin") ||
        !request.has_header("Access-Control-Request-Method"))
      return httplib::Server::HandlerResponse::Unhandled;
    cors->preflight(request, response);
    return httplib::Server::HandlerResponse::Handled;
  });
  // Runs as every response's headers are written: a route's, an error's, a stream's.
  server.set_post_routing_handler([cors](const httplib::Request& request, httplib::Response& response) {
    if (!request.has_header("Origin") || response.has_header("Access-Control-Allow-Origin") ||
        response.has_header("Access-Control-Allow-Methods"))  // a preflight, answered already
      return;
    cors->simple(request, response);
  });
}

}  // namespace zt::serve
