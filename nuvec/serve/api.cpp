#include "nuvec/serve/api.h"

#include <exception>
#include <memory>
#include <utility>

#include "nuvec/core/error.h"
#include "nuvec/serve/api_error.h"
#include "nuvec/serve/completion_handler.h"
#include "nuvec/serve/embeddings.h"
#include "nuvec/serve/info_handlers.h"
#include "nuvec/serve/request.h"

namespace nuvec::serve {

namespace {

/// Compares in time that does not depend on where the strings first differ, so a key cannot be guessed byte by byte.
bool same_key(const std::string& given, const std::string& key) {
  unsigned char difference = given.size() == key.size() ? 0 : 1;
  for (size_t i = 0; i < given.size(); ++i) {
    difference |= static_cast<unsigned char>(given[i] ^ key[i % (key.empty() ? 1 : key.size())]);
  }
  return difference == 0 && !key.empty();
}

/// A log id for requests that make no completion (a completion's record takes its response's id).
std::string make_request_id() {
  static std::atomic<uint64_t> next{0};
  return "req-" + std::to_string(++next);
}

bool is_open_path(const std::string& path) { return path == "/health" || path == "/metrics"; }

ApiError not_found(const HttpRequest& request) {
  return {404, "Unknown request URL: " + request.method + " " + request.path + ".", "invalid_request_error",
          std::nullopt, "unknown_url"};
}

ApiError wrong_method(const HttpRequest& request, const char* allowed) {
  return {405, request.path + " takes " + allowed + ", not " + request.method + ".", "invalid_request_error",
          std::nullopt, "method_not_allowed"};
}

}  // namespace

Api::Api(ModelRegistry& registry, Metrics& metrics, ApiOptions options, RequestLog* log)
    : registry_(registry), metrics_(metrics), options_(std::move(options)), log_(log) {}

bool Api::authorized(const HttpRequest& request) const {
  if (options_.api_keys.empty() || is_open_path(request.path)) {
    return true;
  }
  auto it = request.headers.find("authorization");
  const std::string prefix = "Bearer ";
  if (it == request.headers.end() || it->second.rfind(prefix, 0) != 0) {
    return false;
  }
  const std::string given = it->second.substr(prefix.size());
  bool match = false;
  for (const std::string& key : options_.api_keys) {
    match = same_key(given, key) || match;
  }
  return match;
}

HttpResponse Api::handle(const HttpRequest& request) {
  auto record = std::make_shared<RequestRecord>();
  record->id = make_request_id();
  record->method = request.method;
  record->path = request.path;
  HttpResponse response;
  try {
    response = route(request, record);
  } catch (const ApiError& e) {
    response = error_response(e);
    record->error = e.what();
  } catch (const nuvec::error& e) {
    // nuvec checks its inputs eagerly: an invalid argument that got past the request's checks is still the
    // client's.
    const bool client = e.kind() == ErrorKind::invalid_argument || e.kind() == ErrorKind::out_of_range ||
                        e.kind() == ErrorKind::overflow;
    response = error_response(client ? invalid_request(e.what()) : internal_error(e.what()));
    record->error = e.what();
  } catch (const std::exception& e) {
    response = error_response(internal_error(e.what()));
    record->error = e.what();
  }
  record->status = response.status;
  if (!response.stream) {
    log(*record);
  }
  return response;
}

bool Api::ready() const { return health(registry_, shutting_down_).status == 200; }

void Api::log(const RequestRecord& record) {
  if (log_ != nullptr) {
    log_->write(record);
  }
}

HttpResponse Api::route(const HttpRequest& request, const std::shared_ptr<RequestRecord>& record) {
  if (!authorized(request)) {
    throw unauthorized();
  }
  if (request.body.size() > options_.max_body_bytes) {
    throw body_too_large(request.body.size(), options_.max_body_bytes);
  }
  const std::string& path = request.path;
  const bool get = request.method == "GET";
  const bool post = request.method == "POST";
  if (path == "/v1/chat/completions" || path == "/v1/completions") {
    if (!post) {
      throw wrong_method(request, "POST");
    }
    const nlohmann::ordered_json body = parse_body(request.body);
    const CompletionRequest parsed =
        path == "/v1/chat/completions" ? parse_chat_request(body) : parse_completion_request(nlohmann::json(body));
    return serve_completion(
        registry_, parsed, record, [this](const RequestRecord& ended) { log(ended); }, request.client_gone);
  }
  if (path == "/v1/embeddings") {
    if (!post) {
      throw wrong_method(request, "POST");
    }
    return embeddings(registry_, nlohmann::json(parse_body(request.body)));
  }
  if (path == "/tokenize" || path == "/detokenize") {
    if (!post) {
      throw wrong_method(request, "POST");
    }
    const nlohmann::json body(parse_body(request.body));
    return path == "/tokenize" ? tokenize(registry_, body) : detokenize(registry_, body);
  }
  const std::string models = "/v1/models";
  if (path == models || path.rfind(models + "/", 0) == 0 || path == "/health" || path == "/metrics") {
    if (!get) {
      throw wrong_method(request, "GET");
    }
    if (path == "/health") {
      return health(registry_, shutting_down_);
    }
    if (path == "/metrics") {
      return metrics_text(metrics_);
    }
    return path == models ? list_models(registry_) : describe_model(registry_, path.substr(models.size() + 1));
  }
  throw not_found(request);
}

}  // namespace nuvec::serve
