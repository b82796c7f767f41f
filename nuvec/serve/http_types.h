#pragma once

// Requests and responses as the handlers see them, without sockets: the HTTP server fills an HttpRequest and writes
// out the HttpResponse, and tests call the handlers with the same structs. A streamed response's body is pulled
// piece by piece from its BodyStream.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace nuvec::serve {

class ApiError;

struct HttpRequest {
  std::string method;
  std::string path;
  /// Header names in lower case.
  std::map<std::string, std::string> headers;
  std::string body;
  /// Set by the HTTP server: whether the client has closed its connection, for a handler that waits long before
  /// it answers (a whole completion). Unset without sockets.
  std::function<bool()> client_gone;
};

/// A body produced while it is sent: server-sent events, or a JSON body that is ready only when generation ends
/// (streamed so that the server notices a client that goes away meanwhile).
class BodyStream {
 public:
  virtual ~BodyStream() = default;
  /// Waits up to `wait` for more of the body and appends it to `out`; returns false once the body is complete
  /// (its last piece appended).
  virtual bool next(std::string& out, std::chrono::milliseconds wait) = 0;
  /// The client went away before the end: stop the work behind the body.
  virtual void cancel() = 0;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  /// When set, the body comes from here and `body` is unused.
  std::shared_ptr<BodyStream> stream;
};

/// A JSON response (invalid UTF-8 in strings replaced).
HttpResponse json_response(int status, const nlohmann::json& body);
/// OpenAI's error body with the error's status (and Retry-After on 429).
HttpResponse error_response(const ApiError& error);
/// Reads a response's whole body, pulling a streamed one to its end.
std::string read_body(HttpResponse& response);

}  // namespace nuvec::serve
