#include "nuvec/serve/http_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <optional>
#include <utility>

#include "nuvec/core/error.h"
#include "nuvec/serve/api_error.h"
#include "nuvec/serve/response_json.h"

namespace nuvec::serve {

namespace {

/// How long a streaming connection waits for the next piece before httplib checks that the client is still there.
constexpr std::chrono::milliseconds stream_poll{100};

/// One end of a connection: its address as text and its port, as httplib reports a request's ends.
using SocketEnd = std::pair<std::string, int>;

SocketEnd address_of(const sockaddr_storage& address) {
  std::array<char, INET6_ADDRSTRLEN> text{};
  if (address.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
    inet_ntop(AF_INET, &v4.sin_addr, text.data(), text.size());
    return {text.data(), ntohs(v4.sin_port)};
  }
  if (address.ss_family != AF_INET6) {
    return {"", -1};
  }
  const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
  inet_ntop(AF_INET6, &v6.sin6_addr, text.data(), text.size());
  return {text.data(), ntohs(v6.sin6_port)};
}

/// The descriptor of the connection from `remote` to `local`, found among the process's by its two ends (httplib
/// does not hand it to handlers); -1 when none matches.
int find_connection(const SocketEnd& remote, const SocketEnd& local) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", error)) {
    const std::string name = entry.path().filename().string();
    int fd = -1;
    if (std::from_chars(name.data(), name.data() + name.size(), fd).ec != std::errc()) {
      continue;
    }
    sockaddr_storage peer{};
    sockaddr_storage self{};
    socklen_t peer_size = sizeof(peer);
    socklen_t self_size = sizeof(self);
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_size) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&self), &self_size) != 0) {
      continue;
    }
    if (address_of(peer) == remote && address_of(self) == local) {
      return fd;
    }
  }
  return -1;
}

/// Whether the peer of `fd` closed the connection: reading would give end-of-file (or a reset), while bytes a
/// client sent ahead (a next request) mean it is still there.
bool peer_closed(int fd) {
  char byte = 0;
  const ssize_t n = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

HttpRequest convert(const httplib::Request& from) {
  HttpRequest to;
  // The connection stays open while its handler runs, so the descriptor found stays this request's.
  to.client_gone = [remote = SocketEnd(from.remote_addr, from.remote_port),
                    local = SocketEnd(from.local_addr, from.local_port), fd = std::optional<int>()]() mutable {
    if (!fd) {
      fd = find_connection(remote, local);
    }
    return *fd >= 0 && peer_closed(*fd);
  };
  to.method = from.method;
  to.path = from.path;
  to.body = from.body;
  for (const auto& [name, value] : from.headers) {
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    to.headers.emplace(std::move(lower), value);
  }
  return to;
}

void write(const HttpResponse& response, httplib::Response& to) {
  to.status = response.status;
  for (const auto& [name, value] : response.headers) {
    to.set_header(name, value);
  }
  if (!response.stream) {
    to.set_content(response.body, response.content_type);
    return;
  }
  std::shared_ptr<BodyStream> stream = response.stream;
  to.set_chunked_content_provider(
      response.content_type,
      [stream](size_t, httplib::DataSink& sink) {
        std::string piece;
        const bool more = stream->next(piece, stream_poll);
        if (!piece.empty() && !sink.write(piece.data(), piece.size())) {
          return false;  // the client went away; the releaser cancels the request
        }
        if (!more) {
          sink.done();
        }
        return true;
      },
      [stream](bool success) {
        if (!success) {
          stream->cancel();
        }
      });
}

/// httplib's own errors (unknown method, body over the limit, ...) get OpenAI's error body too.
httplib::Server::HandlerResponse fill_error(const httplib::Request& request, httplib::Response& response) {
  if (!response.body.empty() || response.is_chunked_content_provider_) {
    return httplib::Server::HandlerResponse::Unhandled;
  }
  const std::string message = response.status == 413
                                  ? "The request body is larger than the server accepts."
                                  : "The server could not handle " + request.method + " " + request.path + ".";
  const ApiError error(response.status, message, response.status >= 500 ? "server_error" : "invalid_request_error");
  response.set_content(dump(error.body()), "application/json");
  return httplib::Server::HandlerResponse::Handled;
}

}  // namespace

HttpServer::HttpServer(Api& api, HttpServerOptions options)
    : api_(api), options_(std::move(options)), server_(std::make_unique<httplib::Server>()) {
  const int threads = std::max(options_.threads, 2);
  server_->new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  server_->set_payload_max_length(api_.options().max_body_bytes);
  server_->set_tcp_nodelay(true);
  auto handler = [this](const httplib::Request& request, httplib::Response& response) {
    write(api_.handle(convert(request)), response);
  };
  server_->Get(".*", handler);
  server_->Post(".*", handler);
  server_->Put(".*", handler);
  server_->Delete(".*", handler);
  server_->Patch(".*", handler);
  server_->set_error_handler(httplib::Server::HandlerWithResponse(fill_error));
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::start() {
  if (options_.port == 0) {
    port_ = server_->bind_to_any_port(options_.host);
  } else {
    port_ = server_->bind_to_port(options_.host, options_.port) ? options_.port : -1;
  }
  if (port_ <= 0) {
    throw_error(ErrorKind::io, "[serve] cannot listen on " + options_.host + ":" + std::to_string(options_.port) +
                                   " (the address is taken or not this machine's).");
  }
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // stop() does nothing to a server that is not running yet, so start() returns only once it runs.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!server_->is_running()) {
    if (std::chrono::steady_clock::now() > deadline) {
      throw_error(ErrorKind::io, "[serve] the server on port " + std::to_string(port_) + " did not start.");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return port_;
}

void HttpServer::stop() {
  server_->stop();
  if (thread_.joinable()) {
    thread_.join();
  }
}

}  // namespace nuvec::serve
