#include "serve/api_error.h"

namespace zt::serve {

nlohmann::json ApiError::body() const {
  auto or_null = [](const std::string& text) { return text.empty() ? nlohmann::json() : nlohmann::json(text); };
  return {{"error", {{"message", what()}, {"type", type_}, {"param", or_null(param_)}, {"code", or_null(code_)}}}};
}

ApiError invalid_request(const std::string& message, const std::string& param) {
  return ApiError(400, message, "invalid_request_error", param);
}

ApiError model_not_found(const std::string& asked, const std::string& served) {
  return ApiError(404, "The model '" + asked + "' does not exist: this server serves '" + served + "'",
                  "invalid_request_error", "model", "model_not_found");
}

}  // namespace zt::serve
