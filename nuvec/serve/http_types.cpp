#include "nuvec/serve/http_types.h"

#include "nuvec/serve/api_error.h"
#include "nuvec/serve/response_json.h"

namespace nuvec::serve {

HttpResponse json_response(int status, const nlohmann::json& body) {
  HttpResponse response;
  response.status = status;
  response.body = dump(body);
  return response;
}

HttpResponse error_response(const ApiError& error) {
  HttpResponse response = json_response(error.status(), error.body());
  if (error.status() == 429) {
    response.headers.emplace_back("Retry-After", "1");
  }
  return response;
}

std::string read_body(HttpResponse& response) {
  if (!response.stream) {
    return response.body;
  }
  std::string out;
  while (response.stream->next(out, std::chrono::milliseconds(100))) {
  }
  return out;
}

}  // namespace nuvec::serve
