#include "nuvec/serve/grpc_server.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "nuvec/core/error.h"
#include "nuvec/serve/http_types.h"
#include "serve.grpc.pb.h"

namespace nuvec::serve {

namespace {

/// How long a Generate call waits for the next piece before it looks whether the client cancelled.
constexpr std::chrono::milliseconds cancel_poll{100};

grpc::StatusCode status_code(int http_status) {
  switch (http_status) {
    case 400:
    case 413:
      return grpc::StatusCode::INVALID_ARGUMENT;
    case 401:
      return grpc::StatusCode::UNAUTHENTICATED;
    case 404:
      return grpc::StatusCode::NOT_FOUND;
    case 429:
      return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case 503:
      return grpc::StatusCode::UNAVAILABLE;
    default:
      return grpc::StatusCode::INTERNAL;
  }
}

/// The HTTP request a call stands for, with the call's "authorization" metadata.
HttpRequest http_request(const grpc::ServerContext& context, std::string method, std::string path,
                         const nlohmann::json& body) {
  HttpRequest request{std::move(method),
                      std::move(path),
                      {{"content-type", "application/json"}},
                      body.is_null() ? "" : body.dump(),
                      {}};
  const auto& metadata = context.client_metadata();
  if (auto it = metadata.find("authorization"); it != metadata.end()) {
    request.headers.emplace("authorization", std::string(it->second.data(), it->second.size()));
  }
  request.client_gone = [&context] { return context.IsCancelled(); };
  return request;
}

/// A non-200 answer as the call's status, with the error body's message; OK otherwise.
grpc::Status status_of(HttpResponse& response) {
  if (response.status == 200) {
    return grpc::Status::OK;
  }
  const nlohmann::json body = nlohmann::json::parse(read_body(response), nullptr, false);
  const std::string message = body.is_object() && body.contains("error") ? body["error"].value("message", "") : "";
  return {status_code(response.status), message};
}

/// The text, tokens and finish reason of one SSE chunk of a completion or a chat completion.
rpc::GenerateResponse piece_of(const nlohmann::json& chunk) {
  rpc::GenerateResponse piece;
  for (const nlohmann::json& choice : chunk.value("choices", nlohmann::json::array())) {
    const nlohmann::json& logprobs = choice["logprobs"];
    if (choice.contains("delta")) {
      piece.mutable_text()->append(choice["delta"].value("content", ""));
      for (const nlohmann::json& token :
           logprobs.is_object() ? logprobs.value("content", nlohmann::json::array()) : nlohmann::json::array()) {
        piece.add_tokens(token["token"].get<std::string>());
      }
    } else {
      piece.mutable_text()->append(choice.value("text", ""));
      for (const nlohmann::json& token :
           logprobs.is_object() ? logprobs.value("tokens", nlohmann::json::array()) : nlohmann::json::array()) {
        piece.add_tokens(token.get<std::string>());
      }
    }
    if (choice["finish_reason"].is_string()) {
      piece.set_finish_reason(choice["finish_reason"].get<std::string>());
    }
  }
  return piece;
}

/// The completion request's JSON body (chat when there are messages), streamed, with each token's text.
std::pair<std::string, nlohmann::json> completion_body(const rpc::GenerateRequest& request) {
  nlohmann::json body = {{"stream", true}};
  std::string path = "/v1/completions";
  if (request.messages_size() > 0) {
    path = "/v1/chat/completions";
    body["messages"] = nlohmann::json::array();
    for (const rpc::ChatMessage& message : request.messages()) {
      body["messages"].push_back({{"role", message.role()}, {"content", message.content()}});
    }
    body["logprobs"] = true;
  } else {
    body["prompt"] = request.prompt();
    body["logprobs"] = 0;
  }
  if (!request.model().empty()) {
    body["model"] = request.model();
  }
  if (request.has_max_tokens()) {
    body["max_tokens"] = request.max_tokens();
  }
  if (request.has_temperature()) {
    body["temperature"] = request.temperature();
  }
  if (request.has_top_p()) {
    body["top_p"] = request.top_p();
  }
  if (request.has_top_k()) {
    body["top_k"] = request.top_k();
  }
  if (request.has_min_p()) {
    body["min_p"] = request.min_p();
  }
  if (request.has_presence_penalty()) {
    body["presence_penalty"] = request.presence_penalty();
  }
  if (request.has_frequency_penalty()) {
    body["frequency_penalty"] = request.frequency_penalty();
  }
  if (request.stop_size() > 0) {
    body["stop"] = nlohmann::json(std::vector<std::string>(request.stop().begin(), request.stop().end()));
  }
  if (request.has_seed()) {
    body["seed"] = request.seed();
  }
  return {path, body};
}

}  // namespace

class GrpcService final : public rpc::Serve::Service {
 public:
  explicit GrpcService(Api& api) : api_(api) {}

  grpc::Status Generate(grpc::ServerContext* context, const rpc::GenerateRequest* request,
                        grpc::ServerWriter<rpc::GenerateResponse>* writer) override {
    auto [path, body] = completion_body(*request);
    HttpResponse response = api_.handle(http_request(*context, "POST", path, body));
    if (response.status != 200 || !response.stream) {
      return status_of(response);
    }
    std::string pending;
    bool more = true;
    while (more) {
      if (context->IsCancelled()) {
        response.stream->cancel();
        return grpc::Status::CANCELLED;
      }
      more = response.stream->next(pending, cancel_poll);
      // Each event is "data: JSON\n\n"; the last is "data: [DONE]".
      for (size_t end = pending.find("\n\n"); end != std::string::npos; end = pending.find("\n\n")) {
        const std::string data = pending.substr(6, end - 6);
        pending.erase(0, end + 2);
        if (data == "[DONE]") {
          continue;
        }
        const nlohmann::json chunk = nlohmann::json::parse(data);
        if (chunk.contains("error")) {
          return {grpc::StatusCode::INTERNAL, chunk["error"].value("message", "")};
        }
        rpc::GenerateResponse piece = piece_of(chunk);
        if ((!piece.text().empty() || piece.tokens_size() > 0 || !piece.finish_reason().empty()) &&
            !writer->Write(piece)) {
          response.stream->cancel();
          return grpc::Status::CANCELLED;
        }
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status ListModels(grpc::ServerContext* context, const rpc::ListModelsRequest* /*request*/,
                          rpc::ListModelsResponse* reply) override {
    HttpResponse response = api_.handle(http_request(*context, "GET", "/v1/models", nullptr));
    if (response.status != 200) {
      return status_of(response);
    }
    const nlohmann::json list = nlohmann::json::parse(response.body);
    for (const nlohmann::json& model : list["data"]) {
      reply->add_models(model["id"].get<std::string>());
    }
    return grpc::Status::OK;
  }

  grpc::Status Tokenize(grpc::ServerContext* context, const rpc::TokenizeRequest* request,
                        rpc::TokenizeResponse* reply) override {
    nlohmann::json body = {{"prompt", request->text()}};
    if (!request->model().empty()) {
      body["model"] = request->model();
    }
    if (request->has_add_special_tokens()) {
      body["add_special_tokens"] = request->add_special_tokens();
    }
    HttpResponse response = api_.handle(http_request(*context, "POST", "/tokenize", body));
    if (response.status != 200) {
      return status_of(response);
    }
    const nlohmann::json tokens = nlohmann::json::parse(response.body);
    for (const nlohmann::json& id : tokens["tokens"]) {
      reply->add_tokens(id.get<int32_t>());
    }
    return grpc::Status::OK;
  }

  grpc::Status Health(grpc::ServerContext* context, const rpc::HealthRequest* /*request*/,
                      rpc::HealthResponse* reply) override {
    HttpResponse response = api_.handle(http_request(*context, "GET", "/health", nullptr));
    reply->set_status(nlohmann::json::parse(response.body).value("status", ""));
    return grpc::Status::OK;
  }

 private:
  Api& api_;
};

GrpcServer::GrpcServer(Api& api, std::string host, int port)
    : service_(std::make_unique<GrpcService>(api)), host_(std::move(host)), port_(port) {}

GrpcServer::~GrpcServer() { stop(); }

int GrpcServer::start() {
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort(host_ + ":" + std::to_string(port_), grpc::InsecureServerCredentials(), &bound);
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (!server_ || bound == 0) {
    server_.reset();
    throw_error(ErrorKind::io, "[serve] gRPC cannot listen on " + host_ + ":" + std::to_string(port_) +
                                   " (the address is taken or not this machine's).");
  }
  return bound;
}

void GrpcServer::stop() {
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    server_.reset();
  }
}

}  // namespace nuvec::serve
