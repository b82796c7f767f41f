#include "nuvec/serve/request_log.h"

#include <nlohmann/json.hpp>

#include "nuvec/serve/response_json.h"

namespace nuvec::serve {

void RequestLog::write(const RequestRecord& record) {
  if (out_ == nullptr) {
    return;
  }
  const auto now = std::chrono::system_clock::now();
  nlohmann::json line = {
      {"time", std::chrono::duration<double>(now.time_since_epoch()).count()},
      {"id", record.id},
      {"method", record.method},
      {"path", record.path},
      {"status", record.status},
      {"total_seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - record.start).count()},
  };
  if (!record.model.empty()) {
    line["model"] = record.model;
    line["stream"] = record.stream;
    line["prompt_tokens"] = record.prompt_tokens;
    line["completion_tokens"] = record.completion_tokens;
    line["time_to_first_token_seconds"] =
        record.first_token_seconds ? nlohmann::json(*record.first_token_seconds) : nlohmann::json(nullptr);
    line["finish_reason"] = record.finish_reason;
  }
  if (!record.error.empty()) {
    line["error"] = record.error;
  }
  const std::string text = dump(line) + "\n";
  std::lock_guard lock(mutex_);
  std::fputs(text.c_str(), out_);
  std::fflush(out_);
}

}  // namespace nuvec::serve
