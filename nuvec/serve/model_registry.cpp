#include "nuvec/serve/model_registry.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <utility>

#include "nuvec/core/error.h"
#include "nuvec/lm/load_model.h"

namespace nuvec::serve {

std::shared_ptr<const lm::TokenTexts> ServedModel::token_texts() {
  std::call_once(texts_once_, [this] {
    texts_ = std::make_shared<const lm::TokenTexts>(loaded.tokenizer, loaded.model->vocab_size());
  });
  return texts_;
}

int served_context(const ModelOptions& options, int own) {
  // The batch generator refuses prompts past the model's own context, so --ctx-size can only narrow it.
  return options.context > 0 && own > 0 ? std::min(options.context, own) : std::max(options.context, own);
}

SchedulerOptions served_scheduler(const ModelOptions& options, int context) {
  SchedulerOptions scheduler = options.scheduler;
  // By default every running sequence can fill the context: what the server allowed before the cache had a size.
  if (scheduler.kv_cache_tokens <= 0) {
    scheduler.kv_cache_tokens = static_cast<int>(
        std::min<int64_t>(static_cast<int64_t>(scheduler.parallel) * context, std::numeric_limits<int>::max()));
  }
  return scheduler;
}

ModelRegistry::ModelRegistry(Metrics& metrics) : metrics_(metrics) {}

ModelRegistry::~ModelRegistry() { shutdown("The server is shutting down."); }

void ModelRegistry::announce(const std::string& name) {
  std::lock_guard lock(mutex_);
  if (routes_.contains(name)) {
    throw_invalid("[serve] '" + name + "' is a route's name; give the model a name of its own.");
  }
  if (std::find(announced_.begin(), announced_.end(), name) != announced_.end()) {
    throw_invalid("[serve] two models are named '" + name + "'; give each --model NAME=PATH a name of its own.");
  }
  announced_.push_back(name);
}

void ModelRegistry::add(const std::string& name, lm::LoadedModel loaded, const ModelOptions& options,
                        std::optional<lm::LoadedModel> draft) {
  if (draft && draft->model->vocab_size() != loaded.model->vocab_size()) {
    throw_invalid("[serve] the draft model's vocabulary (" + std::to_string(draft->model->vocab_size()) +
                  " tokens) is not the vocabulary of model '" + name + "' (" +
                  std::to_string(loaded.model->vocab_size()) + " tokens).");
  }
  const bool sharded = options.group && options.group->size() > 1;
  if (draft && sharded) {
    throw_invalid("[serve] model '" + name + "' is sharded across ranks: it cannot have a draft model.");
  }
  auto served = std::make_shared<ServedModel>(name, std::move(loaded));
  served->sharded = sharded;
  served->draft = std::move(draft);
  served->context = served_context(options, served->loaded.model->max_context());
  served->max_tokens = options.max_tokens;
  if (served->context <= 0) {
    throw_invalid("[serve] model '" + name + "' does not say its context length; give --ctx-size.");
  }
  const SchedulerOptions scheduler = served_scheduler(options, served->context);
  served->kv_cache_tokens = scheduler.kv_cache_tokens;
  served->created =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  served->scheduler = std::make_unique<Scheduler>(served->loaded, name, scheduler, metrics_.model(name), compute_,
                                                  served->draft ? &*served->draft : nullptr, options.group);
  std::lock_guard lock(mutex_);
  if (std::find(announced_.begin(), announced_.end(), name) == announced_.end()) {
    announced_.push_back(name);
  }
  models_.push_back(std::move(served));
  // Keep the announced order, so the first model stays the default whichever loads first.
  std::stable_sort(models_.begin(), models_.end(), [this](const auto& a, const auto& b) {
    return std::find(announced_.begin(), announced_.end(), a->name) <
           std::find(announced_.begin(), announced_.end(), b->name);
  });
}

void ModelRegistry::load(const std::string& name, const std::string& path, const ModelOptions& options,
                         const std::string& draft_path) {
  std::optional<lm::LoadedModel> loaded;
  std::optional<lm::LoadedModel> draft;
  {
    std::lock_guard compute(compute_);
    // Sharded across the ranks as it loads: each reads only its slices of the checkpoint.
    std::optional<lm::Placement> placement;
    if (options.group && options.group->size() > 1) {
      placement = lm::Placement{*options.group};
    }
    loaded = lm::load_model(path, placement);
    if (!draft_path.empty()) {
      draft = lm::load_model(draft_path);
    }
  }
  add(name, std::move(*loaded), options, std::move(draft));
}

void ModelRegistry::add_route(const RouteSpec& route, uint64_t seed) {
  std::lock_guard lock(mutex_);
  if (routes_.contains(route.name) || std::find(announced_.begin(), announced_.end(), route.name) != announced_.end()) {
    throw_invalid("[serve] --route " + route.name + ": the name is already a model's or a route's.");
  }
  for (const RouteTarget& target : route.targets) {
    if (std::find(announced_.begin(), announced_.end(), target.model) == announced_.end()) {
      throw_invalid("[serve] --route " + route.name + ": '" + target.model +
                    "' is not a served model (give it with --model NAME=PATH).");
    }
  }
  routes_.emplace(route.name, ModelRoute(route.targets, seed));
}

std::shared_ptr<ServedModel> ModelRegistry::find(const std::string& requested) const {
  std::lock_guard lock(mutex_);
  const auto route = routes_.find(requested);
  const std::string& name = route == routes_.end() ? requested : route->second.pick();
  if (name.empty()) {
    if (announced_.empty() || models_.empty() || models_.front()->name != announced_.front()) {
      return nullptr;
    }
    return models_.front();
  }
  for (const auto& model : models_) {
    if (model->name == name) {
      return model;
    }
  }
  return nullptr;
}

bool ModelRegistry::is_loading(const std::string& name) const {
  std::lock_guard lock(mutex_);
  if (const auto route = routes_.find(name); route != routes_.end()) {
    const auto& targets = route->second.targets();
    return std::any_of(targets.begin(), targets.end(), [this](const RouteTarget& target) {
      return std::none_of(models_.begin(), models_.end(), [&](const auto& m) { return m->name == target.model; });
    });
  }
  const bool announced =
      name.empty() ? !announced_.empty() : std::find(announced_.begin(), announced_.end(), name) != announced_.end();
  const std::string& wanted = name.empty() && !announced_.empty() ? announced_.front() : name;
  const bool ready = std::any_of(models_.begin(), models_.end(), [&](const auto& m) { return m->name == wanted; });
  return announced && !ready;
}

bool ModelRegistry::loading() const {
  std::lock_guard lock(mutex_);
  return models_.size() < announced_.size();
}

std::vector<std::shared_ptr<ServedModel>> ModelRegistry::models() const {
  std::lock_guard lock(mutex_);
  return models_;
}

std::map<std::string, std::vector<RouteTarget>> ModelRegistry::routes() const {
  std::lock_guard lock(mutex_);
  std::map<std::string, std::vector<RouteTarget>> out;
  for (const auto& [name, route] : routes_) {
    out.emplace(name, route.targets());
  }
  return out;
}

// NOLINTNEXTLINE(readability-make-member-function-const): the registry's schedulers stop taking requests.
void ModelRegistry::stop_accepting() {
  for (const auto& model : models()) {
    model->scheduler->stop_accepting();
  }
}

bool ModelRegistry::idle() const {
  const auto all = models();
  return std::all_of(all.begin(), all.end(), [](const auto& m) { return m->scheduler->idle(); });
}

// NOLINTNEXTLINE(readability-make-member-function-const): the registry's schedulers stop.
void ModelRegistry::shutdown(const std::string& reason) {
  for (const auto& model : models()) {
    model->scheduler->shutdown(reason);
  }
}

}  // namespace nuvec::serve
