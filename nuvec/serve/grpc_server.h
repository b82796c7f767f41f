#pragma once

// The gRPC service of serve.proto on its own port: each call becomes the HTTP API's request (the same key check,
// validation, handlers, schedulers and request log), and its answer the call's reply. Generate streams: its
// server-sent events become GenerateResponses as they come; a cancelled call cancels its request.

#include <memory>
#include <string>

#include "nuvec/serve/api.h"

namespace grpc {
class Server;
}

namespace nuvec::serve {

class GrpcService;

class GrpcServer {
 public:
  /// Serves on `host`:`port` (0: a free port) once started.
  GrpcServer(Api& api, std::string host, int port);
  ~GrpcServer();
  GrpcServer(const GrpcServer&) = delete;
  GrpcServer& operator=(const GrpcServer&) = delete;
  GrpcServer(GrpcServer&&) = delete;
  GrpcServer& operator=(GrpcServer&&) = delete;

  /// Starts listening; returns the port. Throws an io error when the address cannot be bound.
  int start();
  /// Cancels running calls and stops.
  void stop();

 private:
  std::unique_ptr<GrpcService> service_;
  std::string host_;
  int port_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace nuvec::serve
