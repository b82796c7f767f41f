#include "nuvec/serve/grpc_server.h"

#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "health.grpc.pb.h"
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

/// A JSON schema sent as a google.protobuf.Struct, as JSON.
nlohmann::json json_of(const google::protobuf::Struct& value) {
  std::string text;
  if (!google::protobuf::util::MessageToJsonString(value, &text).ok()) {
    throw_invalid("[serve] A schema could not be read as JSON.");
  }
  return nlohmann::json::parse(text);
}

std::string bytes_of(const nlohmann::json& list) {
  std::string bytes;
  for (const nlohmann::json& b : list) {
    bytes.push_back(static_cast<char>(b.get<int>()));
  }
  return bytes;
}

/// Chat's logprobs ({"content": [{"token", "logprob", "bytes", "top_logprobs"}]}) as TokenLogprobs.
void add_chat_logprobs(const nlohmann::json& content, rpc::GenerateResponse& piece) {
  for (const nlohmann::json& token : content) {
    rpc::TokenLogprob& out = *piece.add_logprobs();
    out.set_token(token["token"].get<std::string>());
    out.set_logprob(token["logprob"].get<float>());
    out.set_bytes(bytes_of(token["bytes"]));
    for (const nlohmann::json& top : token["top_logprobs"]) {
      rpc::TopLogprob& alternative = *out.add_top_logprobs();
      alternative.set_token(top["token"].get<std::string>());
      alternative.set_logprob(top["logprob"].get<float>());
      alternative.set_bytes(bytes_of(top["bytes"]));
    }
  }
}

/// The completions' logprobs ({"tokens", "token_logprobs", "top_logprobs": [{token: logprob}]}) as TokenLogprobs.
void add_completion_logprobs(const nlohmann::json& logprobs, rpc::GenerateResponse& piece) {
  const nlohmann::json& tokens = logprobs["tokens"];
  for (size_t i = 0; i < tokens.size(); ++i) {
    rpc::TokenLogprob& out = *piece.add_logprobs();
    out.set_token(tokens[i].get<std::string>());
    out.set_logprob(logprobs["token_logprobs"][i].get<float>());
    out.set_bytes(out.token());
    // The completions' alternatives are an object keyed by token; they go out likeliest first, as chat's do.
    std::vector<std::pair<float, std::string>> top;
    for (const auto& [token, logprob] : logprobs["top_logprobs"][i].items()) {
      top.emplace_back(logprob.get<float>(), token);
    }
    std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (const auto& [logprob, token] : top) {
      rpc::TopLogprob& alternative = *out.add_top_logprobs();
      alternative.set_token(token);
      alternative.set_logprob(logprob);
      alternative.set_bytes(token);
    }
  }
}

/// One SSE chunk's choice (each chunk carries one) as a GenerateResponse: its index, text, tokens, log-probabilities
/// when asked for, tool calls and finish reason.
rpc::GenerateResponse piece_of(const nlohmann::json& chunk, bool want_logprobs) {
  rpc::GenerateResponse piece;
  for (const nlohmann::json& choice : chunk.value("choices", nlohmann::json::array())) {
    piece.set_index(choice.value("index", 0));
    const nlohmann::json& logprobs = choice["logprobs"];
    if (choice.contains("delta")) {
      const nlohmann::json& delta = choice["delta"];
      if (delta.contains("content") && delta["content"].is_string()) {
        piece.mutable_text()->append(delta["content"].get<std::string>());
      }
      for (const nlohmann::json& call : delta.value("tool_calls", nlohmann::json::array())) {
        rpc::ToolCall& out = *piece.add_tool_calls();
        out.set_id(call.value("id", ""));
        out.set_name(call["function"].value("name", ""));
        out.set_arguments(call["function"].value("arguments", ""));
      }
      const nlohmann::json content =
          logprobs.is_object() ? logprobs.value("content", nlohmann::json::array()) : nlohmann::json::array();
      for (const nlohmann::json& token : content) {
        piece.add_tokens(token["token"].get<std::string>());
      }
      if (want_logprobs) {
        add_chat_logprobs(content, piece);
      }
    } else {
      piece.mutable_text()->append(choice.value("text", ""));
      if (logprobs.is_object()) {
        for (const nlohmann::json& token : logprobs.value("tokens", nlohmann::json::array())) {
          piece.add_tokens(token.get<std::string>());
        }
        if (want_logprobs) {
          add_completion_logprobs(logprobs, piece);
        }
      }
    }
    if (choice["finish_reason"].is_string()) {
      piece.set_finish_reason(choice["finish_reason"].get<std::string>());
    }
  }
  return piece;
}

nlohmann::json chat_message_json(const rpc::ChatMessage& message) {
  nlohmann::json out = {{"role", message.role()}, {"content", message.content()}};
  if (message.tool_calls_size() > 0) {
    out["tool_calls"] = nlohmann::json::array();
    for (const rpc::ToolCall& call : message.tool_calls()) {
      out["tool_calls"].push_back(
          {{"id", call.id()}, {"type", "function"}, {"function", {{"name", call.name()}, {"arguments", call.arguments()}}}});
    }
  }
  if (!message.tool_call_id().empty()) {
    out["tool_call_id"] = message.tool_call_id();
  }
  return out;
}

/// The tools and tool_choice of a chat request, in the HTTP API's form.
void add_tools(const rpc::GenerateRequest& request, nlohmann::json& body) {
  if (request.tools_size() > 0) {
    body["tools"] = nlohmann::json::array();
    for (const rpc::Tool& tool : request.tools()) {
      nlohmann::json function = {{"name", tool.name()}};
      if (!tool.description().empty()) {
        function["description"] = tool.description();
      }
      if (tool.has_parameters()) {
        function["parameters"] = json_of(tool.parameters());
      }
      if (tool.has_strict()) {
        function["strict"] = tool.strict();
      }
      body["tools"].push_back({{"type", "function"}, {"function", std::move(function)}});
    }
  }
  const std::string& choice = request.tool_choice();
  if (choice == "none" || choice == "auto" || choice == "required") {
    body["tool_choice"] = choice;
  } else if (!choice.empty()) {
    body["tool_choice"] = {{"type", "function"}, {"function", {{"name", choice}}}};
  }
  if (request.has_parallel_tool_calls()) {
    body["parallel_tool_calls"] = request.parallel_tool_calls();
  }
}

/// The request's response_format in the HTTP API's form ({"type"}, with {"json_schema": {...}} for a schema).
nlohmann::json response_format_json(const rpc::ResponseFormat& format) {
  nlohmann::json out = {{"type", format.type()}};
  if (format.type() == "json_schema") {
    nlohmann::json schema = {{"name", format.name().empty() ? "response" : format.name()}};
    if (format.has_schema()) {
      schema["schema"] = json_of(format.schema());
    }
    if (format.has_strict()) {
      schema["strict"] = format.strict();
    }
    out["json_schema"] = std::move(schema);
  }
  return out;
}

/// The completion request's JSON body (chat when there are messages), streamed, with each token's text (and its
/// log-probabilities, when asked for).
std::pair<std::string, nlohmann::json> completion_body(const rpc::GenerateRequest& request) {
  nlohmann::json body = {{"stream", true}};
  std::string path = "/v1/completions";
  if (request.messages_size() > 0) {
    path = "/v1/chat/completions";
    body["messages"] = nlohmann::json::array();
    for (const rpc::ChatMessage& message : request.messages()) {
      body["messages"].push_back(chat_message_json(message));
    }
    body["logprobs"] = true;
    if (request.has_logprobs()) {
      body["top_logprobs"] = request.logprobs();
    }
    add_tools(request, body);
  } else {
    if (request.tools_size() > 0 || !request.tool_choice().empty()) {
      throw_invalid("[serve] Tools need chat messages, not a prompt.");
    }
    body["prompt"] = request.prompt();
    body["logprobs"] = request.has_logprobs() ? request.logprobs() : 0;
  }
  if (!request.model().empty()) {
    body["model"] = request.model();
  }
  if (request.has_response_format()) {
    body["response_format"] = response_format_json(request.response_format());
  }
  if (request.has_n()) {
    body["n"] = request.n();
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
  if (!request.logit_bias().empty()) {
    nlohmann::json bias = nlohmann::json::object();
    for (const auto& [id, value] : request.logit_bias()) {
      bias[std::to_string(id)] = value;
    }
    body["logit_bias"] = std::move(bias);
  }
  return {path, body};
}

/// How often Watch looks whether the server's health changed.
constexpr std::chrono::milliseconds health_poll{100};

}  // namespace

class GrpcService final : public rpc::Serve::Service {
 public:
  explicit GrpcService(Api& api) : api_(api) {}

  grpc::Status Generate(grpc::ServerContext* context, const rpc::GenerateRequest* request,
                        grpc::ServerWriter<rpc::GenerateResponse>* writer) override {
    std::pair<std::string, nlohmann::json> call;
    try {
      call = completion_body(*request);
    } catch (const std::exception& e) {
      return {grpc::StatusCode::INVALID_ARGUMENT, e.what()};
    }
    auto& [path, body] = call;
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
        rpc::GenerateResponse piece = piece_of(chunk, request->has_logprobs());
        if ((!piece.text().empty() || piece.tokens_size() > 0 || piece.tool_calls_size() > 0 ||
             !piece.finish_reason().empty()) &&
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

/// grpc.health.v1.Health: the server ("") and the Serve service are SERVING while /health would answer 200.
class HealthService final : public grpc::health::v1::Health::Service {
 public:
  using Response = grpc::health::v1::HealthCheckResponse;

  explicit HealthService(Api& api) : api_(api) {}

  grpc::Status Check(grpc::ServerContext* /*context*/, const grpc::health::v1::HealthCheckRequest* request,
                     Response* reply) override {
    const auto status = status_of(request->service());
    if (status == Response::SERVICE_UNKNOWN) {
      return {grpc::StatusCode::NOT_FOUND, "unknown service '" + request->service() + "'"};
    }
    reply->set_status(status);
    return grpc::Status::OK;
  }

  /// Sends the status now and again whenever it changes, until the client cancels or the server stops.
  grpc::Status Watch(grpc::ServerContext* context, const grpc::health::v1::HealthCheckRequest* request,
                     grpc::ServerWriter<Response>* writer) override {
    std::optional<Response::ServingStatus> sent;
    while (!context->IsCancelled()) {
      const auto status = status_of(request->service());
      if (status != sent) {
        Response reply;
        reply.set_status(status);
        if (!writer->Write(reply)) {
          break;
        }
        sent = status;
      }
      std::this_thread::sleep_for(health_poll);
    }
    return grpc::Status::CANCELLED;
  }

 private:
  [[nodiscard]] Response::ServingStatus status_of(const std::string& service) const {
    if (!service.empty() && service != rpc::Serve::service_full_name()) {
      return Response::SERVICE_UNKNOWN;
    }
    return api_.ready() ? Response::SERVING : Response::NOT_SERVING;
  }

  Api& api_;
};

namespace {

std::string read_pem(const std::string& path, const char* what) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  if (!file || text.str().find("-----BEGIN") == std::string::npos) {
    throw_error(ErrorKind::io, std::string("[serve] Cannot read the gRPC TLS ").append(what).append(" '")
                                   .append(path).append("' (a PEM file)."));
  }
  return text.str();
}

}  // namespace

GrpcServer::GrpcServer(Api& api, std::string host, int port, GrpcTls tls)
    : service_(std::make_unique<GrpcService>(api)),
      health_(std::make_unique<HealthService>(api)),
      host_(std::move(host)),
      port_(port),
      tls_(std::move(tls)) {}

GrpcServer::~GrpcServer() { stop(); }

int GrpcServer::start() {
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (!tls_.cert_file.empty()) {
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({read_pem(tls_.key_file, "key"), read_pem(tls_.cert_file, "certificate")});
    credentials = grpc::SslServerCredentials(ssl);
  }
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort(host_ + ":" + std::to_string(port_), credentials, &bound);
  builder.RegisterService(service_.get());
  builder.RegisterService(health_.get());
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
