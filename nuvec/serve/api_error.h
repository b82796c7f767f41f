#pragma once

// Errors a client gets back, in OpenAI's shape: {"error": {"message", "type", "param", "code"}} with the HTTP
// status. Request parsing throws ApiError; the handlers turn it into the response, so a client's mistake is never a
// 500.

#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>

namespace nuvec::serve {

class ApiError : public std::runtime_error {
 public:
  /// `type` is OpenAI's error type ("invalid_request_error", ...), `param` the request field at fault.
  ApiError(int status, const std::string& message, std::string type, std::optional<std::string> param = std::nullopt,
           std::optional<std::string> code = std::nullopt);

  [[nodiscard]] int status() const { return status_; }
  [[nodiscard]] const std::string& type() const { return type_; }
  [[nodiscard]] const std::optional<std::string>& param() const { return param_; }
  [[nodiscard]] const std::optional<std::string>& code() const { return code_; }
  /// The body OpenAI sends: {"error": {...}}.
  [[nodiscard]] nlohmann::json body() const;

 private:
  int status_;
  std::string type_;
  std::optional<std::string> param_;
  std::optional<std::string> code_;
};

/// 400: a malformed or out-of-range request field, named by `param`.
ApiError invalid_request(const std::string& message, std::optional<std::string> param = std::nullopt);
/// 400: a field nuvec understands but does not support yet.
ApiError unsupported_field(const std::string& param, const std::string& what);
/// 404: no model of that name is served.
ApiError model_not_found(const std::string& model);
/// 401: no API key, or a wrong one.
ApiError unauthorized();
/// 413: the body is larger than the server accepts.
ApiError body_too_large(size_t size, size_t limit);
/// 429: the model's queue is full.
ApiError queue_full(const std::string& model);
/// 499 (nginx's "client closed request"): the client went away before its answer was ready; logged, never sent.
ApiError client_closed();
/// 503: the server is loading its models or shutting down.
ApiError unavailable(const std::string& message);
/// 500: the server's own failure (never a client's mistake).
ApiError internal_error(const std::string& message);

}  // namespace nuvec::serve
