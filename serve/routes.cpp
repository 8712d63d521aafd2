#include "serve/routes.h"

#include "runtime/log.h"
#include "serve/api_error.h"
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

}  // namespace

void add_routes(httplib::Server& server, RouteContext& context) {
  server.Get("/health", [](const httplib::Request&, httplib::Response& response) {
    response.set_content("{}", "application/json");
  });
  server.Get("/v1/models", guarded(context, [&context](const httplib::Request&, httplib::Response& response) {
               respond_json(response, 200, model_list(context.model.name, context.started));
             }));
  server.Post("/v1/chat/completions", guarded(context, [&context](const auto& request, auto& response) {
                respond_with_generation(context, parse_chat_request(request.body), response);
              }));
  server.Post("/v1/completions", guarded(context, [&context](const auto& request, auto& response) {
                respond_with_generation(context, parse_completion_request(request.body), response);
              }));
  // Routes that do not exist, and requests cpp-httplib refused (a body over the limit: 413);
  // errors the routes answered already keep their body.
  server.set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request& request, httplib::Response& response) {
        if (!response.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        const std::string message = response.status == 413 ? "the request body is larger than this server accepts"
                                                           : "no route " + request.method + " " + request.path;
        respond_error(response, ApiError(response.status, message, "invalid_request_error"));
        return httplib::Server::HandlerResponse::Handled;
      }));
}

}  // namespace zt::serve
