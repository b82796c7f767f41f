#pragma once

// `nuvec serve` as a library call: listen, load the models (answering /health with 503 meanwhile), serve until
// SIGTERM or SIGINT, then drain: refuse new requests, let running ones finish for a while, end the rest with an
// error event, close, return 0. With a group of several ranks (under nuvec launch) the model is sharded across
// them: rank 0 serves and the others follow its batches (lockstep.h) until it stops.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nuvec/distributed/distributed.h"
#include "nuvec/serve/grpc_server.h"
#include "nuvec/serve/model_route.h"

namespace nuvec::serve {

struct ServeOptions {
  /// (name, path) of each model; the first is the default.
  std::vector<std::pair<std::string, std::string>> models;
  /// A draft model for the first model (speculative decoding of requests that decode alone); empty: none.
  std::string draft_model;
  /// Tokens the draft proposes at a time.
  int num_draft = 4;
  /// Names whose requests the models split by weight (A/B tests).
  std::vector<RouteSpec> routes;
  /// Seeds the routes' draws, to repeat them; unset: a random seed.
  std::optional<uint64_t> route_seed;
  std::string host = "127.0.0.1";
  int port = 8080;
  /// The gRPC service's port (0: a free one); unset: no gRPC.
  std::optional<int> grpc_port;
  /// The gRPC service's certificate and key (PEM files); empty: plain text.
  GrpcTls grpc_tls;
  /// Sequences decoding at once, per model.
  int parallel = 4;
  /// Tokens of prompt and completion together (0: each model's own context, which it never exceeds).
  int ctx_size = 0;
  /// The most tokens one completion may generate (0: up to the context).
  int max_tokens = 0;
  std::vector<std::string> api_keys;
  /// Requests waiting per model before 429.
  int max_queue = 64;
  /// Prompt positions kept per model for reuse by prompts that start the same way (0: none).
  int prefix_cache = 4096;
  /// Positions of keys and values kept per model for all its sequences together (0: --parallel times the context).
  int kv_cache_tokens = 0;
  /// The request log's file (appended); empty: standard error.
  std::string log_file;
  size_t max_body_bytes = size_t{8} << 20;
  /// How long running requests may go on after a stop signal before they are ended.
  double drain_seconds = 30.0;
  /// The ranks to shard the model across (one model, no draft); unset or a group of one: this process alone.
  std::optional<distributed::Group> group = std::nullopt;
};

/// Serves until SIGTERM or SIGINT; returns the exit status (0 after a clean stop). Startup messages go to `err`.
/// Throws for a model that cannot be loaded or an address that cannot be bound.
int serve(const ServeOptions& options, std::FILE* err);

}  // namespace nuvec::serve
