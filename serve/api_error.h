// An error as the OpenAI API reports it: an HTTP status and
// {"error": {"message", "type", "param", "code"}}. Request parsing throws it for bad input;
// the routes turn it (and any other failure) into the response.
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace zt::serve {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string message, std::string type, std::string param = "", std::string code = "")
      : std::runtime_error(message),
        status_(status),
        type_(std::move(type)),
        param_(std::move(param)),
        code_(std::move(code)) {}

  int status() const { return status_; }
  // The response body; `param` and `code` are null when empty.
  nlohmann::json body() const;

 private:
  int status_;
  std::string type_, param_, code_;
};

// 400 invalid_request_error naming the field.
ApiError invalid_request(const std::string& message, const std::string& param = "");

// 404 model_not_found: `asked` is not `served`, the one model this server serves.
ApiError model_not_found(const std::string& asked, const std::string& served);

}  // namespace zt::serve
