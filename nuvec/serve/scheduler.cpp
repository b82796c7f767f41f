#include "nuvec/serve/scheduler.h"

#include <algorithm>
#include <exception>
#include <set>
#include <utility>

#include "nuvec/core/error.h"
#include "nuvec/serve/api_error.h"

namespace nuvec::serve {

namespace {

/// How long the idle thread sleeps before it looks again for cancelled requests.
constexpr std::chrono::milliseconds idle_poll{50};

double seconds_between(std::chrono::steady_clock::time_point from, std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

}  // namespace

lm::BatchOptions batch_options(const SchedulerOptions& scheduler) {
  lm::BatchOptions options;
  options.max_batch_size = scheduler.parallel;
  options.prefix_cache_size = scheduler.prefix_cache;
  options.kv_cache_tokens = scheduler.kv_cache_tokens;
  return options;
}

Scheduler::Scheduler(const lm::LoadedModel& model, std::string name, SchedulerOptions options, ModelMetrics& metrics,
                     std::mutex& compute, const lm::LoadedModel* draft, std::optional<distributed::Group> group)
    : model_(model),
      draft_(draft),
      name_(std::move(name)),
      options_(options),
      metrics_(metrics),
      compute_(compute),
      generator_(model, batch_options(options), std::move(group)) {
  if (draft_ != nullptr && generator_.leads()) {
    throw_invalid("[serve] a model sharded across ranks cannot have a draft model.");
  }
  thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() { shutdown("The model is being unloaded."); }

void Scheduler::submit(GenerationJob job) {
  const int sequences = static_cast<int>(job.prompts.size());
  {
    std::lock_guard lock(mutex_);
    if (!accepting_) {
      throw unavailable("The server is shutting down and takes no new requests.");
    }
    if (static_cast<int>(queue_.size()) >= options_.max_queue) {
      throw queue_full(name_);
    }
    auto state = std::make_shared<RequestState>();
    state->channel = job.channel;
    state->arrival = job.arrival;
    state->open = sequences;
    open_sequences_ += sequences;
    queue_.push_back(Queued{std::move(job), std::move(state), 0});
  }
  wake_.notify_one();
}

void Scheduler::stop_accepting() {
  std::lock_guard lock(mutex_);
  accepting_ = false;
}

void Scheduler::shutdown(const std::string& reason) {
  {
    std::lock_guard lock(mutex_);
    accepting_ = false;
    if (stopping_) {
      return;
    }
    stopping_ = true;
    stop_reason_ = reason;
  }
  wake_.notify_one();
  if (thread_.joinable()) {
    thread_.join();
  }
}

void Scheduler::loop() {
  while (true) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, idle_poll, [this] { return stopping_ || !queue_.empty() || !running_.empty(); });
      if (stopping_) {
        break;
      }
    }
    drop_cancelled();
    if (decode_alone()) {
      continue;
    }
    admit();
    if (!running_.empty()) {
      step();
    } else {
      std::lock_guard compute(compute_);
      generator_.keep_alive();
    }
    publish_gauges();
  }
  fail_running(stop_reason_);
  {
    std::lock_guard compute(compute_);
    generator_.stop();
  }
  std::deque<Queued> left;
  {
    std::lock_guard lock(mutex_);
    left.swap(queue_);
  }
  for (Queued& queued : left) {
    for (size_t i = queued.next; i < queued.job.prompts.size(); ++i) {
      fail(*queued.state, static_cast<int>(i), stop_reason_);
    }
  }
  publish_gauges();
}

void Scheduler::admit() {
  while (true) {
    Queued* front = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (queue_.empty()) {
        return;
      }
      front = &queue_.front();
    }
    // Only this thread pops the queue, so `front` stays valid while other threads push behind it.
    const int room = options_.parallel - generator_.generator().active() - generator_.generator().waiting();
    if (room <= 0) {
      return;
    }
    if (front->next == 0) {
      metrics_.observe_queue_time(seconds_between(front->state->arrival, Clock::now()));
    }
    const size_t end = std::min(front->job.prompts.size(), front->next + static_cast<size_t>(room));
    for (size_t i = front->next; i < end; ++i) {
      const auto& prompt = front->job.prompts[i];
      try {
        std::lock_guard compute(compute_);
        const uint64_t uid = generator_.insert(prompt, front->job.options[i]);
        running_[uid] = Running{front->state, static_cast<int>(i), std::nullopt};
        metrics_.add_prompt_tokens(static_cast<int>(prompt.size()));
      } catch (const std::exception& e) {
        fail(*front->state, static_cast<int>(i), e.what());
      }
    }
    front->next = end;
    if (front->next == front->job.prompts.size()) {
      std::lock_guard lock(mutex_);
      queue_.pop_front();
    }
  }
}

bool Scheduler::decode_alone() {
  Queued alone;
  {
    std::lock_guard lock(mutex_);
    if (draft_ == nullptr || !running_.empty() || generator_.generator().has_work() || queue_.size() != 1 ||
        queue_.front().job.prompts.size() != 1 || queue_.front().job.options.front().constraint) {
      return false;
    }
    alone = std::move(queue_.front());
    queue_.pop_front();
    metrics_.set_queue(1, 0);
  }
  metrics_.observe_queue_time(seconds_between(alone.state->arrival, Clock::now()));
  RequestState& state = *alone.state;
  lm::GenerateOptions options = lm::with_model_stop_ids(model_, alone.job.options.front());
  options.draft_model = draft_->model.get();
  options.num_draft = options_.num_draft;
  std::optional<Clock::time_point> last_token;
  bool ended = false;
  const auto on_token = [&](const lm::GenerationResponse& response) {
    if (state.channel->cancelled()) {
      return false;
    }
    const Clock::time_point now = Clock::now();
    metrics_.add_generated_token(response.from_draft);
    if (!last_token) {
      metrics_.observe_first_token(seconds_between(state.arrival, now));
    } else {
      metrics_.observe_between_tokens(seconds_between(*last_token, now));
    }
    last_token = now;
    if (response.finish_reason) {
      // As in step(): the metrics settle before the last token goes out.
      end_sequence(state, *response.finish_reason);
      publish_gauges();
      ended = true;
    }
    state.channel->push(SequenceEvent{0, response, std::nullopt});
    return true;
  };
  std::string failure;
  try {
    std::lock_guard compute(compute_);
    metrics_.add_prompt_tokens(static_cast<int>(alone.job.prompts.front().size()));
    lm::stream_generate(*model_.model, model_.tokenizer, alone.job.prompts.front(), options, on_token);
  } catch (const std::exception& e) {
    failure = std::string("Generation failed: ").append(e.what());
  }
  if (!ended && !state.channel->cancelled()) {
    fail(state, 0, failure.empty() ? std::string("Generation stopped without a finish reason.") : failure);
    publish_gauges();
    return true;
  }
  if (!ended) {
    --state.open;
    publish_gauges();
  }
  --open_sequences_;
  return true;
}

void Scheduler::drop_cancelled() {
  int dropped = 0;
  for (auto it = running_.begin(); it != running_.end();) {
    if (!it->second.state->channel->cancelled()) {
      ++it;
      continue;
    }
    {
      std::lock_guard compute(compute_);
      generator_.remove(it->first);
      const lm::KVCacheStats kv = generator_.generator().kv_cache_stats();
      metrics_.set_kv_cache(static_cast<double>(kv.used_blocks) / kv.blocks, kv.preemptions);
    }
    --it->second.state->open;
    ++dropped;
    it = running_.erase(it);
  }
  {
    std::lock_guard lock(mutex_);
    for (auto it = queue_.begin(); it != queue_.end();) {
      if (!it->job.channel->cancelled()) {
        ++it;
        continue;
      }
      dropped += static_cast<int>(it->job.prompts.size() - it->next);
      it = queue_.erase(it);
    }
  }
  if (dropped > 0) {
    // The gauges first: whoever sees the scheduler idle sees them settled too.
    publish_gauges();
    open_sequences_ -= dropped;
  }
}

void Scheduler::step() {
  std::vector<lm::BatchResponse> responses;
  try {
    std::lock_guard compute(compute_);
    responses = generator_.next();
    const lm::PrefixCacheStats& prefix = generator_.generator().prefix_cache_stats();
    metrics_.set_prefix_cache(prefix.queries, prefix.hits, generator_.generator().prefix_cache_positions());
    const lm::KVCacheStats kv = generator_.generator().kv_cache_stats();
    metrics_.set_kv_cache(static_cast<double>(kv.used_blocks) / kv.blocks, kv.preemptions);
  } catch (const std::exception& e) {
    fail_running(std::string("Generation failed: ").append(e.what()));
    return;
  }
  const Clock::time_point now = Clock::now();
  // Metrics and gauges are settled before the tokens go out, and a sequence stops counting as open only after its
  // last token went out: whoever has an answer, or sees the scheduler idle, sees it counted.
  std::vector<std::pair<std::shared_ptr<RequestState>, SequenceEvent>> out;
  int ended = 0;
  for (lm::BatchResponse& r : responses) {
    auto it = running_.find(r.uid);
    if (it == running_.end()) {
      continue;
    }
    Running& sequence = it->second;
    const int index = sequence.index;
    std::shared_ptr<RequestState> state = sequence.state;
    metrics_.add_generated_token();
    if (!state->first_token) {
      state->first_token = true;
      metrics_.observe_first_token(seconds_between(state->arrival, now));
    }
    if (sequence.last_token) {
      metrics_.observe_between_tokens(seconds_between(*sequence.last_token, now));
    }
    sequence.last_token = now;
    if (r.response.finish_reason) {
      end_sequence(*state, *r.response.finish_reason);
      running_.erase(it);
      ++ended;
    }
    out.emplace_back(std::move(state), SequenceEvent{index, std::move(r.response), std::nullopt});
  }
  publish_gauges();
  for (auto& [state, event] : out) {
    state->channel->push(std::move(event));
  }
  open_sequences_ -= ended;
}

void Scheduler::fail(RequestState& state, int index, const std::string& message) {
  end_sequence(state, "");
  SequenceEvent event;
  event.index = index;
  event.error = message;
  state.channel->push(std::move(event));
  --open_sequences_;
}

void Scheduler::end_sequence(RequestState& state, const std::string& finish_reason) {
  if (--state.open == 0 && !finish_reason.empty()) {
    metrics_.finish(finish_reason, seconds_between(state.arrival, Clock::now()));
  }
}

void Scheduler::fail_running(const std::string& message) {
  for (auto& [uid, sequence] : running_) {
    fail(*sequence.state, sequence.index, message);
  }
  running_.clear();
  std::lock_guard compute(compute_);
  generator_.reset();
}

void Scheduler::publish_gauges() {
  std::set<const RequestState*> requests;
  for (const auto& [uid, sequence] : running_) {
    requests.insert(sequence.state.get());
  }
  std::lock_guard lock(mutex_);
  metrics_.set_queue(static_cast<int>(requests.size()), static_cast<int>(queue_.size()));
}

}  // namespace nuvec::serve
