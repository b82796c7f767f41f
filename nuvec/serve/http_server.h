#pragma once

// The API on a socket, through cpp-httplib: each request is converted to an HttpRequest and answered by the Api;
// streamed bodies are written as they come, and a client that goes away cancels its request. The listening socket
// is bound before start() returns, so port 0 (any free port) can be used and read back.

#include <cstddef>
#include <memory>
#include <string>
#include <thread>

#include "nuvec/serve/api.h"

namespace httplib {
class Server;
}

namespace nuvec::serve {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  /// 0: any free port.
  int port = 8080;
  /// Connections served at once; a streaming client holds one for its whole stream.
  int threads = 32;
};

class HttpServer {
 public:
  /// `api` must outlive the server.
  HttpServer(Api& api, HttpServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  HttpServer(HttpServer&&) = delete;
  HttpServer& operator=(HttpServer&&) = delete;

  /// Binds and answers on a thread of its own; returns the port. Throws when the address cannot be bound.
  int start();
  /// Stops accepting, waits for the requests being answered, and closes.
  void stop();
  [[nodiscard]] int port() const { return port_; }

 private:
  Api& api_;
  HttpServerOptions options_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace nuvec::serve
