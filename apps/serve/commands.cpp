#include "apps/serve/commands.h"

#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "apps/cli/options.h"
#include "nuvec/distributed/distributed.h"
#include "nuvec/serve/serve_loop.h"

namespace nuvec::serve_cli {

namespace {

/// "NAME=PATH", or a PATH served under its file or folder name (without .gguf).
std::pair<std::string, std::string> model_spec(const std::string& value) {
  const size_t eq = value.find('=');
  if (eq != std::string::npos && eq > 0 && value.substr(0, eq).find('/') == std::string::npos) {
    if (eq + 1 == value.size()) {
      throw std::invalid_argument("--model " + value + " names no path after '='");
    }
    return {value.substr(0, eq), value.substr(eq + 1)};
  }
  std::filesystem::path path(value);
  if (!path.has_filename()) {
    path = path.parent_path();
  }
  std::string name = path.filename().string();
  if (path.extension() == ".gguf") {
    name = path.stem().string();
  }
  return {name, value};
}

/// One key per line; blank lines and surrounding spaces are ignored.
std::vector<std::string> read_keys(const std::string& file) {
  std::ifstream in(file);
  if (!in) {
    throw std::invalid_argument("--api-key-file cannot read '" + file + "'");
  }
  std::vector<std::string> keys;
  std::string line;
  while (std::getline(in, line)) {
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) {
      continue;
    }
    keys.push_back(line.substr(first, line.find_last_not_of(" \t\r") - first + 1));
  }
  if (keys.empty()) {
    throw std::invalid_argument("--api-key-file '" + file + "' holds no key");
  }
  return keys;
}

}  // namespace

int run_serve(int argc, char** argv, std::FILE* err) {
  serve::ServeOptions o;
  // --model and --route may repeat, which cli::Options does not allow: take its pairs out first.
  std::vector<char*> rest = {argv[0], argv[1]};
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--model" || flag == "--route") {
      if (i + 1 >= argc) {
        throw std::invalid_argument(flag + " expects a value, got nothing");
      }
      if (flag == "--model") {
        o.models.push_back(model_spec(argv[++i]));
      } else {
        o.routes.push_back(serve::parse_route(argv[++i]));
      }
    } else {
      rest.push_back(argv[i]);
    }
  }
  std::optional<std::string> api_key;
  std::optional<std::string> api_key_file;
  std::optional<std::string> log_file;
  std::optional<std::string> draft_model;
  std::optional<std::string> grpc_tls_cert;
  std::optional<std::string> grpc_tls_key;
  cli::Options()
      .add("--host", o.host)
      .add("--port", o.port)
      .add("--grpc-port", o.grpc_port)
      .add("--grpc-tls-cert", grpc_tls_cert)
      .add("--grpc-tls-key", grpc_tls_key)
      .add("--parallel", o.parallel)
      .add("--ctx-size", o.ctx_size)
      .add("--max-tokens", o.max_tokens)
      .add("--api-key", api_key)
      .add("--api-key-file", api_key_file)
      .add("--max-queue", o.max_queue)
      .add("--prefix-cache", o.prefix_cache)
      .add("--kv-cache-tokens", o.kv_cache_tokens)
      .add("--log-file", log_file)
      .add("--drain-seconds", o.drain_seconds)
      .add("--route-seed", o.route_seed)
      .add("--draft-model", draft_model)
      .add("--num-draft", o.num_draft)
      .parse(static_cast<int>(rest.size()), rest.data());
  if (o.models.empty()) {
    throw std::invalid_argument("--model PATH is required");
  }
  if (api_key && api_key_file) {
    throw std::invalid_argument("give --api-key or --api-key-file, not both");
  }
  if (api_key) {
    o.api_keys.push_back(*api_key);
  } else if (api_key_file) {
    o.api_keys = read_keys(*api_key_file);
  }
  if (o.parallel < 1 || o.max_queue < 0 || o.ctx_size < 0 || o.max_tokens < 0 || o.prefix_cache < 0 ||
      o.kv_cache_tokens < 0 || o.port < 0 || o.port > 65535 ||
      (o.grpc_port && (*o.grpc_port < 0 || *o.grpc_port > 65535))) {
    throw std::invalid_argument(
        "--parallel must be >= 1, --max-queue, --ctx-size, --max-tokens, --prefix-cache and --kv-cache-tokens >= 0, "
        "--port and --grpc-port in [0, 65535]");
  }
  o.log_file = log_file.value_or("");
  o.draft_model = draft_model.value_or("");
  if (grpc_tls_cert.has_value() != grpc_tls_key.has_value() || (grpc_tls_cert && !o.grpc_port)) {
    throw std::invalid_argument("--grpc-tls-cert and --grpc-tls-key go together, with --grpc-port");
  }
  o.grpc_tls = {grpc_tls_cert.value_or(""), grpc_tls_key.value_or("")};
  if (o.num_draft < 1) {
    throw std::invalid_argument("--num-draft must be >= 1");
  }
  // Under nuvec launch (or mpirun) the model is sharded across the ranks.
  o.group = distributed::init();
  return serve::serve(o, err);
}

}  // namespace nuvec::serve_cli
