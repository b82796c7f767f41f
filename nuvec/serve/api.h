#pragma once

// The HTTP API without sockets: routes a request to its handler, checks the API key and the body's size, turns
// every error into OpenAI's error body (a client's mistake is a 4xx, never a 500), and logs one line per request.

#include <atomic>
#include <cstddef>
#include <string>
#include <vector>

#include "nuvec/serve/http_types.h"
#include "nuvec/serve/metrics.h"
#include "nuvec/serve/model_registry.h"
#include "nuvec/serve/request_log.h"

namespace nuvec::serve {

struct ApiOptions {
  /// Keys accepted as "Authorization: Bearer KEY"; none: every request is accepted. /health and /metrics are open.
  std::vector<std::string> api_keys;
  /// Larger bodies are refused with 413.
  size_t max_body_bytes = size_t{8} << 20;
};

class Api {
 public:
  /// `log` may be null (no request log).
  Api(ModelRegistry& registry, Metrics& metrics, ApiOptions options, RequestLog* log);

  /// Answers one request; never throws.
  HttpResponse handle(const HttpRequest& request);
  /// From now on /health answers 503 (the server is draining before it exits).
  void set_shutting_down() { shutting_down_ = true; }
  /// Whether /health would answer 200 (models loaded, not draining); asked without a request or a log line.
  [[nodiscard]] bool ready() const;
  [[nodiscard]] const ApiOptions& options() const { return options_; }

 private:
  HttpResponse route(const HttpRequest& request, const std::shared_ptr<RequestRecord>& record);
  [[nodiscard]] bool authorized(const HttpRequest& request) const;
  void log(const RequestRecord& record);

  ModelRegistry& registry_;
  Metrics& metrics_;
  ApiOptions options_;
  RequestLog* log_;
  std::atomic<bool> shutting_down_ = false;
};

}  // namespace nuvec::serve
