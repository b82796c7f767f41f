#pragma once

// The models a server serves, by name, each with its scheduler. Models are announced first and loaded after (the
// server answers /health with 503 meanwhile), so a client can watch a large model load.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nuvec/distributed/distributed.h"
#include "nuvec/lm/constrain/token_texts.h"
#include "nuvec/lm/models/load.h"
#include "nuvec/serve/metrics.h"
#include "nuvec/serve/model_route.h"
#include "nuvec/serve/scheduler.h"

namespace nuvec::serve {

struct ModelOptions {
  SchedulerOptions scheduler;
  /// The context a request may fill, prompt and completion together (0, or more than the model's own: the model's
  /// own).
  int context = 0;
  /// The most tokens one completion may ask for (0: the rest of the context).
  int max_tokens = 0;
  /// The ranks the model is sharded across (tensor parallel), this one being rank 0: the others follow its
  /// scheduler (follow_leader). Unset, or a group of one: not sharded.
  std::optional<distributed::Group> group = std::nullopt;
};

/// The context a model whose own is `own` positions (0: unknown) is served with: --ctx-size can only narrow it.
int served_context(const ModelOptions& options, int own);
/// The scheduler options of a model served with `context` positions: by default the KV cache lets every running
/// sequence fill the context.
SchedulerOptions served_scheduler(const ModelOptions& options, int context);

/// A loaded model and its scheduler.
struct ServedModel {
  ServedModel(std::string model_name, lm::LoadedModel model) : name(std::move(model_name)), loaded(std::move(model)) {}

  std::string name;
  lm::LoadedModel loaded;
  /// Prompt and completion together stay within this many tokens.
  int context = 0;
  /// The most tokens one completion may generate (0: no limit besides the context).
  int max_tokens = 0;
  /// Positions the KV cache holds for all of the model's sequences together: no request may need more.
  int kv_cache_tokens = 0;
  int64_t created = 0;
  /// Whether the model is sharded across ranks: requests that need more than the batch generator's changes
  /// (embeddings, response_format constraints) are refused.
  bool sharded = false;
  /// The model's draft for speculative decoding (same vocabulary), if it has one.
  std::optional<lm::LoadedModel> draft;
  std::unique_ptr<Scheduler> scheduler;

  /// The bytes of each token, for constrained decoding (response_format): worked out once, at the first request
  /// that needs them.
  std::shared_ptr<const lm::TokenTexts> token_texts();

 private:
  std::once_flag texts_once_;
  std::shared_ptr<const lm::TokenTexts> texts_;
};

class ModelRegistry {
 public:
  explicit ModelRegistry(Metrics& metrics);
  ~ModelRegistry();
  ModelRegistry(const ModelRegistry&) = delete;
  ModelRegistry& operator=(const ModelRegistry&) = delete;
  ModelRegistry(ModelRegistry&&) = delete;
  ModelRegistry& operator=(ModelRegistry&&) = delete;

  /// Says that `name` will be served: until it is added, the server is loading.
  void announce(const std::string& name);
  /// Serves `loaded` under `name` from now on and starts its scheduler; with a `draft` (which must share the
  /// vocabulary), requests decoding alone use speculative decoding.
  void add(const std::string& name, lm::LoadedModel loaded, const ModelOptions& options,
           std::optional<lm::LoadedModel> draft = std::nullopt);
  /// Loads the model at `path` (lm::load_model), and its draft at `draft_path` unless empty, and adds them. With a
  /// group of several ranks in `options`, the model is sharded across them (and takes no draft).
  void load(const std::string& name, const std::string& path, const ModelOptions& options,
            const std::string& draft_path = "");
  /// Answers requests for `route.name` with its targets, drawn by weight with an engine seeded by `seed`. Throws
  /// for a name that is already a model's or a route's and for a target that is not announced.
  void add_route(const RouteSpec& route, uint64_t seed);

  /// The model named `name` (for a route, the target drawn for this request), or the first one when `name` is
  /// empty; null when there is none (yet).
  [[nodiscard]] std::shared_ptr<ServedModel> find(const std::string& name) const;
  /// Whether `name` (or a target of the route `name`) was announced but is not loaded yet.
  [[nodiscard]] bool is_loading(const std::string& name) const;
  /// Whether some announced model is still loading.
  [[nodiscard]] bool loading() const;
  /// The models ready now, in the order they were announced.
  [[nodiscard]] std::vector<std::shared_ptr<ServedModel>> models() const;
  /// The routes, by name, with their targets.
  [[nodiscard]] std::map<std::string, std::vector<RouteTarget>> routes() const;

  /// Refuses new requests to every model.
  void stop_accepting();
  /// Whether no model has a queued or running sequence.
  [[nodiscard]] bool idle() const;
  /// Ends what is left with `reason` and stops every scheduler.
  void shutdown(const std::string& reason);

  /// Held around every model computation (see Scheduler).
  std::mutex& compute_mutex() { return compute_; }

 private:
  Metrics& metrics_;
  std::mutex compute_;
  mutable std::mutex mutex_;
  std::vector<std::string> announced_;
  std::vector<std::shared_ptr<ServedModel>> models_;
  /// Drawing a target changes the route's engine, which find() does under `mutex_`.
  mutable std::map<std::string, ModelRoute> routes_;
};

}  // namespace nuvec::serve
