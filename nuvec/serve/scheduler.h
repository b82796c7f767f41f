#pragma once

// One model's scheduler: a thread that owns the model's lm::BatchGenerator and runs it step after step while there
// is work. Requests queue in from any thread (a bounded queue: a full one answers 429), their sequences join the
// batch between steps while it has room (`parallel` sequences at most), each token goes out through the request's
// channel as soon as its step ends, and cancelled requests leave the batch before the next step.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nuvec/distributed/distributed.h"
#include "nuvec/lm/generate/batch_generator.h"
#include "nuvec/lm/generate/generate.h"
#include "nuvec/lm/models/load.h"
#include "nuvec/serve/lockstep.h"
#include "nuvec/serve/metrics.h"
#include "nuvec/serve/request_channel.h"

namespace nuvec::serve {

struct SchedulerOptions {
  /// Sequences decoding at once.
  int parallel = 4;
  /// Requests waiting for a place; one more is refused with 429.
  int max_queue = 64;
  /// Prompt positions kept after their prefill for later prompts that start the same way (0: none).
  int prefix_cache = 4096;
  /// Tokens the draft model proposes at a time, when the scheduler has one.
  int num_draft = 4;
  /// Positions of keys and values kept for all sequences together (0: the batch generator's default).
  int kv_cache_tokens = 0;
};

/// The batch generator's options for a scheduler's.
lm::BatchOptions batch_options(const SchedulerOptions& scheduler);

/// A request's sequences (one per choice, in index order) and where their tokens go.
struct GenerationJob {
  std::vector<std::vector<int32_t>> prompts;
  std::vector<lm::GenerateOptions> options;
  std::shared_ptr<RequestChannel> channel;
  std::chrono::steady_clock::time_point arrival = std::chrono::steady_clock::now();
};

class Scheduler {
 public:
  /// `model` (and `draft`, when given) must outlive the scheduler. `compute` is held around every model
  /// computation, so the schedulers of several models never compute at once (nuvec's evaluation is not meant to be
  /// driven from several threads). With a `draft` model (same vocabulary), a sequence that would decode alone is
  /// decoded by speculative decoding instead of in the batch (not one under a response_format constraint). With a
  /// `group` of several ranks (the model sharded across them), this is rank 0's scheduler and the other ranks follow
  /// its generator (LockstepGenerator); no draft then.
  Scheduler(const lm::LoadedModel& model, std::string name, SchedulerOptions options, ModelMetrics& metrics,
            std::mutex& compute, const lm::LoadedModel* draft = nullptr,
            std::optional<distributed::Group> group = std::nullopt);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;
  Scheduler(Scheduler&&) = delete;
  Scheduler& operator=(Scheduler&&) = delete;

  /// Queues a request; throws a 429 ApiError when the queue is full and a 503 one once the scheduler stopped
  /// accepting.
  void submit(GenerationJob job);
  /// Refuses new requests from now on; queued and running ones go on.
  void stop_accepting();
  /// Whether no sequence is queued or running.
  [[nodiscard]] bool idle() const { return open_sequences_ == 0; }
  /// Ends every queued and running sequence with `reason` as its error and stops the thread.
  void shutdown(const std::string& reason);

 private:
  using Clock = std::chrono::steady_clock;

  /// What the sequences of one request share: their arrival, first token and how many are still open.
  struct RequestState {
    std::shared_ptr<RequestChannel> channel;
    Clock::time_point arrival;
    bool first_token = false;
    int open = 0;
  };
  struct Queued {
    GenerationJob job;
    std::shared_ptr<RequestState> state;
    size_t next = 0;  // the first sequence not yet in the batch
  };
  struct Running {
    std::shared_ptr<RequestState> state;
    int index = 0;
    std::optional<Clock::time_point> last_token;
  };

  void loop();
  /// Moves queued sequences into the generator while the batch has room.
  void admit();
  /// With a draft model: when the batch is empty and the one queued request has one sequence, decodes it with
  /// speculative decoding, to its end (requests arriving meanwhile wait); returns whether it did.
  bool decode_alone();
  /// Drops the sequences of cancelled requests, queued or running.
  void drop_cancelled();
  /// Runs one step and hands out its tokens.
  void step();
  /// Ends a sequence that produced no token (or no more) with an error event.
  void fail(RequestState& state, int index, const std::string& message);
  /// Ends every running sequence with `message`, and starts a fresh generator.
  void fail_running(const std::string& message);
  /// Counts a sequence of `state` as ended; the request's success is counted with its last sequence's
  /// `finish_reason` (none for a failure).
  void end_sequence(RequestState& state, const std::string& finish_reason);
  void publish_gauges();

  const lm::LoadedModel& model_;
  const lm::LoadedModel* draft_;
  std::string name_;
  SchedulerOptions options_;
  ModelMetrics& metrics_;
  std::mutex& compute_;
  /// Touched by the scheduler's thread alone.
  LockstepGenerator generator_;
  std::map<uint64_t, Running> running_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Queued> queue_;
  bool accepting_ = true;
  bool stopping_ = false;
  std::string stop_reason_;
  std::atomic<int> open_sequences_ = 0;
  std::thread thread_;
};

}  // namespace nuvec::serve
