#include "nuvec/serve/serve_loop.h"

#include <chrono>
#include <csignal>
#include <memory>
#include <optional>
#include <random>
#include <thread>

#include "nuvec/core/error.h"
#include "nuvec/lm/load_model.h"
#include "nuvec/serve/api.h"
#include "nuvec/serve/grpc_server.h"
#include "nuvec/serve/http_server.h"
#include "nuvec/serve/lockstep.h"
#include "nuvec/serve/metrics.h"
#include "nuvec/serve/model_registry.h"
#include "nuvec/serve/request_log.h"
#include "nuvec/serve/stop_signals.h"

namespace nuvec::serve {

namespace {

/// A client that closes its socket must not kill the server with SIGPIPE.
void ignore_broken_pipes() { std::signal(SIGPIPE, SIG_IGN); }

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};

constexpr std::chrono::milliseconds poll_interval{50};

/// A rank other than 0 of a sharded server: loads and shards the model as rank 0 does, then follows rank 0's
/// batches until it stops. Stop signals are left to rank 0, which drains before it stops the others.
int follow(const ServeOptions& options, const ModelOptions& model_options, std::FILE* err) {
  const StopSignals signals;
  ignore_broken_pipes();
  const distributed::Group& group = *options.group;
  lm::LoadedModel loaded = lm::load_model(options.models.front().second, lm::Placement{group});
  std::fprintf(err, "nuvec serve: rank %d of %d follows rank 0\n", group.rank(), group.size());
  std::fflush(err);
  const int context = served_context(model_options, loaded.model->max_context());
  follow_leader(loaded, batch_options(served_scheduler(model_options, context)), group);
  return 0;
}

}  // namespace

int serve(const ServeOptions& options, std::FILE* err) {
  if (options.models.empty()) {
    throw_invalid("[serve] no model given: pass --model PATH (or --model NAME=PATH, as often as needed).");
  }
  const bool sharded = options.group && options.group->size() > 1;
  if (sharded && (options.models.size() != 1 || !options.draft_model.empty() || !options.routes.empty())) {
    throw_invalid("[serve] across " + std::to_string(options.group->size()) +
                  " ranks the server shards one model: give one --model, and no --draft-model or --route.");
  }
  const ModelOptions model_options{SchedulerOptions{options.parallel, options.max_queue, options.prefix_cache,
                                                    options.num_draft, options.kv_cache_tokens},
                                   options.ctx_size, options.max_tokens, options.group};
  if (sharded && options.group->rank() != 0) {
    return follow(options, model_options, err);
  }
  const StopSignals signals;
  ignore_broken_pipes();
  std::unique_ptr<std::FILE, FileCloser> log_file;
  if (!options.log_file.empty()) {
    log_file.reset(std::fopen(options.log_file.c_str(), "a"));
    if (!log_file) {
      throw_error(ErrorKind::io, "[serve] cannot open the log file '" + options.log_file + "' for appending.");
    }
  }
  RequestLog log(log_file ? log_file.get() : stderr);
  Metrics metrics;
  ModelRegistry registry(metrics);
  Api api(registry, metrics, ApiOptions{options.api_keys, options.max_body_bytes}, &log);
  // A thread per running or waiting stream, and a few more for /health, /metrics and short requests.
  const int threads = static_cast<int>(options.models.size()) * (options.parallel + options.max_queue) + 8;
  HttpServer server(api, HttpServerOptions{options.host, options.port, threads});
  for (const auto& [name, path] : options.models) {
    registry.announce(name);
  }
  uint64_t route_seed = options.route_seed ? *options.route_seed : std::random_device{}();
  for (const RouteSpec& route : options.routes) {
    registry.add_route(route, route_seed++);
  }
  const int port = server.start();
  std::fprintf(err, "nuvec serve: listening on http://%s:%d\n", options.host.c_str(), port);
  std::optional<GrpcServer> grpc;
  if (options.grpc_port) {
    grpc.emplace(api, options.host, *options.grpc_port, options.grpc_tls);
    std::fprintf(err, "nuvec serve: gRPC on %s:%d\n", options.host.c_str(), grpc->start());
  }
  std::fflush(err);

  for (const auto& [name, path] : options.models) {
    if (StopSignals::received() != 0) {
      break;
    }
    const bool first = name == options.models.front().first;
    const std::string draft = first ? options.draft_model : "";
    registry.load(name, path, model_options, draft);
    std::fprintf(err, "nuvec serve: model '%s' ready (%s%s%s)\n", name.c_str(), path.c_str(),
                 draft.empty() ? "" : ", draft ", draft.c_str());
    std::fflush(err);
  }
  while (StopSignals::received() == 0) {
    std::this_thread::sleep_for(poll_interval);
  }

  std::fprintf(err, "nuvec serve: stopping (signal %d): finishing running requests\n", StopSignals::received());
  std::fflush(err);
  api.set_shutting_down();
  registry.stop_accepting();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(options.drain_seconds);
  while (!registry.idle() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(poll_interval);
  }
  registry.shutdown("The server is shutting down.");
  if (grpc) {
    grpc->stop();
  }
  server.stop();
  return 0;
}

}  // namespace nuvec::serve
