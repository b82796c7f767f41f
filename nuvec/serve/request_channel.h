#pragma once

// What passes from a model's scheduler thread to the thread answering one request: each sequence's tokens as they
// come (one sequence per choice), or the error that ended it; and the other way, the request's cancellation (the
// client went away).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "nuvec/lm/generate/generate.h"

namespace nuvec::serve {

struct SequenceEvent {
  /// The choice this sequence answers.
  int index = 0;
  /// A token; its finish_reason is set on the sequence's last.
  lm::GenerationResponse response;
  /// Set instead when the sequence failed (no token): what went wrong.
  std::optional<std::string> error;

  [[nodiscard]] bool ends_sequence() const { return error.has_value() || response.finish_reason.has_value(); }
};

class RequestChannel {
 public:
  /// For a request of `sequences` sequences.
  explicit RequestChannel(int sequences);

  /// The scheduler's side: a sequence's token or failure.
  void push(SequenceEvent event);
  /// The request's side: waits up to `wait` for events and takes them all (none when the wait ran out).
  std::vector<SequenceEvent> take(std::chrono::milliseconds wait);
  /// Whether every sequence has ended and every event was taken.
  [[nodiscard]] bool finished() const;

  /// Asks the scheduler to drop the request's sequences; harmless once they ended.
  void cancel() { cancelled_ = true; }
  [[nodiscard]] bool cancelled() const { return cancelled_; }

 private:
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<SequenceEvent> events_;
  int open_sequences_;
  std::atomic<bool> cancelled_ = false;
};

}  // namespace nuvec::serve
