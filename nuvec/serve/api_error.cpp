#include "nuvec/serve/api_error.h"

#include <utility>

namespace nuvec::serve {

ApiError::ApiError(int status, const std::string& message, std::string type, std::optional<std::string> param,
                   std::optional<std::string> code)
    : std::runtime_error(message),
      status_(status),
      type_(std::move(type)),
      param_(std::move(param)),
      code_(std::move(code)) {}

nlohmann::json ApiError::body() const {
  nlohmann::json error = {{"message", what()}, {"type", type_}, {"param", nullptr}, {"code", nullptr}};
  if (param_) {
    error["param"] = *param_;
  }
  if (code_) {
    error["code"] = *code_;
  }
  return {{"error", error}};
}

ApiError invalid_request(const std::string& message, std::optional<std::string> param) {
  return {400, message, "invalid_request_error", std::move(param)};
}

ApiError unsupported_field(const std::string& param, const std::string& what) {
  return {400, what + " is not supported by this server yet.", "invalid_request_error", param, "unsupported"};
}

ApiError model_not_found(const std::string& model) {
  return {404, "The model `" + model + "` does not exist.", "invalid_request_error", "model", "model_not_found"};
}

ApiError unauthorized() {
  return {401, "Incorrect or missing API key: send it as 'Authorization: Bearer <key>'.", "invalid_request_error",
          std::nullopt, "invalid_api_key"};
}

ApiError body_too_large(size_t size, size_t limit) {
  return {413,
          "The request body has " + std::to_string(size) + " bytes, more than the limit of " + std::to_string(limit) +
              " bytes.",
          "invalid_request_error"};
}

ApiError queue_full(const std::string& model) {
  return {429, "The queue of model `" + model + "` is full; retry later.", "rate_limit_exceeded", std::nullopt,
          "queue_full"};
}

ApiError client_closed() {
  return {499, "The client closed the connection before the response was ready.", "invalid_request_error", std::nullopt,
          "client_closed_request"};
}

ApiError unavailable(const std::string& message) { return {503, message, "server_error"}; }

ApiError internal_error(const std::string& message) { return {500, message, "server_error"}; }

}  // namespace nuvec::serve
