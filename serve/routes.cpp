#include "serve/routes.h"

#include "runtime/log.h"
#include "serve/api_error.h"
#include "serve/chat_page.h"
#include "serve/generation_route.h"
#include "serve/openai_format.h"

namespace zt::serve {
namespace {

void respond_json(httplib::Response& response, int status, const nlohmann::json& body) {
  response.status = status;
  response.set_content(json_text(body), "application/json");
}

void respond_error(httplib::Response& response, const ApiError& error) {
  respond_json(response, error.status(), error.body());
}

// The key as OpenAI's clients send it: `Authorization: Bearer KEY`.
bool authorized(const httplib::Request& request, const std::string& key) {
  return key.empty() || request.get_header_value("Authorization") == "Bearer " + key;
}

// `handler` behind the key, its ApiErrors and any other failure answered in OpenAI's shape.
httplib::Server::Handler guarded(RouteContext& context,
                                 std::function<void(const httplib::Request&, httplib::Response&)> handler) {
  return [&context, handler = std::move(handler)](const httplib::Request& request, httplib::Response& response) {
    try {
      if (!authorized(request, context.api_key))
        throw ApiError(401,
                       "Incorrect API key provided: send it as 'Authorization: Bearer KEY' (the server's --api_key)",
                       "invalid_request_error", "", "invalid_api_key");
      handler(request, response);
    } catch (const ApiError& error) {
      respond_error(response, error);
    } catch (const std::exception& error) {
      ZT_ERROR("serve: " << request.method << " " << request.path << " failed: " << error.what());
      respond_error(response, ApiError(500, error.what(), "server_error"));
    }
  };
}

// The methods each route answers (cpp-httplib answers HEAD through the GET handlers).
const std::vector<std::pair<std::string, std::string>>& route_methods() {
  static const std::vector<std::pair<std::string, std::string>> routes = {
      {"/", "GET, HEAD"},          {"/health", "GET, HEAD"},
      {"/v1/models", "GET, HEAD"}, {"/v1/chat/completions", "POST"},
      {"/v1/completions", "POST"},
  };
  return routes;
}

// What cpp-httplib answered on its own, as an OpenAI error: a route asked with a method it
// does not take (405, with Allow), a path that does not exist (404), a POST whose body could
// not be read (400: no Content-Length, or a broken chunked body) and a body over the limit (413).
ApiError unhandled(const httplib::Request& request, httplib::Response& response) {
  if (response.status == 413)
    return ApiError(413, "the request body is larger than this server accepts", "invalid_request_error");
  for (const auto& [path, methods] : route_methods()) {
    if (request.path != path) continue;
    if (response.status == 404) {
      response.set_header("Allow", methods);
      return ApiError(405, "Invalid method for URL (" + request.method + " " + path + "): it takes " + methods,
                      "invalid_request_error", "", "method_not_allowed");
    }
    if (response.status == 400 && request.method == "POST")
      return ApiError(400,
                      "the request body is empty or could not be read: send a JSON object with Content-Type: "
                      "application/json and a Content-Length",
                      "invalid_request_error");
  }
  if (response.status == 404)
    return ApiError(404,
                    "no route " + request.method + " " + request.path +
                        ": this server answers POST /v1/chat/completions, POST /v1/completions, GET /v1/models, "
                        "GET /v1/models/{model}, GET /health and GET / (the chat page)",
                    "invalid_request_error", "", "unknown_url");
  return ApiError(response.status, "the request could not be read (" + request.method + " " + request.path + ")",
                  "invalid_request_error");
}

}  // namespace

void add_routes(httplib::Server& server, RouteContext& context) {
  // The chat page needs no key: a browser cannot send one when it opens a page; the page sends
  // the one typed into it with its own requests.
  server.Get("/", [](const httplib::Request&, httplib::Response& response) {
    const std::string_view page = chat_page_html();
    response.set_content(page.data(), page.size(), "text/html; charset=utf-8");
  });
  server.Get("/health", [](const httplib::Request&, httplib::Response& response) {
    response.set_content("{}", "application/json");
  });
  server.Get("/v1/models", guarded(context, [&context](const httplib::Request&, httplib::Response& response) {
               respond_json(response, 200, model_list(context.model.name, context.started));
             }));
  // openai-python's models.retrieve: the id as the path's rest (a model name may hold '/').
  server.Get("/v1/models/(.+)", guarded(context, [&context](const httplib::Request& request, auto& response) {
               const std::string asked = request.matches[1];
               if (asked != context.model.name) throw model_not_found(asked, context.model.name);
               respond_json(response, 200, model_object(context.model.name, context.started));
             }));
  server.Post("/v1/chat/completions", guarded(context, [&context](const auto& request, auto& response) {
                respond_with_generation(context, parse_chat_request(request.body), response);
              }));
  server.Post("/v1/completions", guarded(context, [&context](const auto& request, auto& response) {
                respond_with_generation(context, parse_completion_request(request.body), response);
              }));
  // What cpp-httplib answered on its own (unhandled); errors the routes answered already keep
  // their body.
  server.set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request& request, httplib::Response& response) {
        if (!response.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        respond_error(response, unhandled(request, response));
        return httplib::Server::HandlerResponse::Handled;
      }));
}

}  // namespace zt::serve
