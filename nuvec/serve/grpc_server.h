#pragma once

// The gRPC service of serve.proto on its own port: each call becomes the HTTP API's request (the same key check,
// validation, handlers, schedulers and request log), and its answer the call's reply. Generate streams: its
// server-sent events become GenerateResponses as they come; a cancelled call cancels its request. Beside it, the
// standard grpc.health.v1 service (health.proto), and TLS when given a certificate.

#include <memory>
#include <string>

#include "nuvec/serve/api.h"

namespace grpc {
class Server;
}

namespace nuvec::serve {

class GrpcService;
class HealthService;

/// A PEM certificate (chain) and its private key: with them the service speaks TLS only; without, plain text.
struct GrpcTls {
  std::string cert_file;
  std::string key_file;
};

class GrpcServer {
 public:
  /// Serves on `host`:`port` (0: a free port) once started, with TLS when `tls` names its files.
  GrpcServer(Api& api, std::string host, int port, GrpcTls tls = {});
  ~GrpcServer();
  GrpcServer(const GrpcServer&) = delete;
  GrpcServer& operator=(const GrpcServer&) = delete;
  GrpcServer(GrpcServer&&) = delete;
  GrpcServer& operator=(GrpcServer&&) = delete;

  /// Starts listening; returns the port. Throws an io error when the address cannot be bound or a TLS file read.
  int start();
  /// Cancels running calls and stops.
  void stop();

 private:
  std::unique_ptr<GrpcService> service_;
  std::unique_ptr<HealthService> health_;
  std::string host_;
  int port_;
  GrpcTls tls_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace nuvec::serve
