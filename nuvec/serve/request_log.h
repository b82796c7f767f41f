#pragma once

// One JSON line per request (id, method, path, model, status, prompt and generated tokens, time to first token,
// total time, finish reason, error), written when the request ends: for a stream, when its last event went out or
// the client left.

#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>

namespace nuvec::serve {

struct RequestRecord {
  std::string id;
  std::string method;
  std::string path;
  std::string model;
  int status = 200;
  bool stream = false;
  int prompt_tokens = 0;
  int completion_tokens = 0;
  std::optional<double> first_token_seconds;
  std::string finish_reason;
  std::string error;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
};

class RequestLog {
 public:
  /// Writes to `out` (standard error, or a file the caller keeps open); null writes nothing.
  explicit RequestLog(std::FILE* out) : out_(out) {}
  /// Writes the record's line, with the time since its start.
  void write(const RequestRecord& record);

 private:
  std::mutex mutex_;
  std::FILE* out_;
};

}  // namespace nuvec::serve
