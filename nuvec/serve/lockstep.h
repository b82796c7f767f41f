#pragma once

// Serving a model sharded across the ranks of a group (nuvec serve under nuvec launch): every forward pass holds
// collectives, so every rank must run the same steps over the same batch. Rank 0 serves HTTP and leads: each change
// its scheduler makes to its batch generator (a sequence inserted with its prompt ids and options, a sequence
// removed, a step, a fresh generator) is broadcast to the other ranks first, and they make the same change to their
// own generator, in the same order. Every sequence samples with its own seed (the server gives each choice one) from
// logits that are equal on every rank (the sharded layers end in all-reduces), so every rank chooses the same tokens,
// and its batch, positions, paged cache and prefix cache stay the leader's.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nuvec/distributed/distributed.h"
#include "nuvec/lm/generate/batch_generator.h"
#include "nuvec/lm/models/load.h"

namespace nuvec::serve {

/// A batch generator that, on the leader of a group of several ranks, broadcasts each change before making it.
/// Without a group (or with a group of one) it is the plain generator. After a failed broadcast (a follower gone)
/// every change throws that failure.
class LockstepGenerator {
 public:
  /// `model` must outlive the generator.
  LockstepGenerator(const lm::LoadedModel& model, lm::BatchOptions options, std::optional<distributed::Group> group);
  ~LockstepGenerator();
  LockstepGenerator(const LockstepGenerator&) = delete;
  LockstepGenerator& operator=(const LockstepGenerator&) = delete;
  LockstepGenerator(LockstepGenerator&&) = delete;
  LockstepGenerator& operator=(LockstepGenerator&&) = delete;

  /// BatchGenerator::insert; options that point at this process's objects (a constraint, a prompt cache, a draft
  /// model) cannot be sent and are refused when sharded.
  uint64_t insert(const std::vector<int32_t>& prompt, const lm::GenerateOptions& options);
  std::vector<lm::BatchResponse> next();
  bool remove(uint64_t uid);
  /// Drops every sequence: a fresh generator, on every rank. Never throws (a failure is kept for the next change).
  void reset();
  /// Tells the followers that the leader lives when nothing was broadcast for a second, so they do not time out
  /// waiting while the server is idle. Never throws.
  void keep_alive();
  /// Ends the followers' loops (once). Never throws.
  void stop();

  [[nodiscard]] const lm::BatchGenerator& generator() const { return *generator_; }
  /// Whether the generator's changes go to other ranks.
  [[nodiscard]] bool leads() const { return group_.has_value(); }

 private:
  /// Broadcasts one change; throws the kept failure, or the broadcast's own.
  void announce(const std::vector<uint8_t>& message);
  void announce_quietly(const std::vector<uint8_t>& message);

  const lm::LoadedModel& model_;
  lm::BatchOptions options_;
  std::optional<distributed::Group> group_;
  std::unique_ptr<lm::BatchGenerator> generator_;
  std::chrono::steady_clock::time_point last_announced_ = std::chrono::steady_clock::now();
  std::string failure_;
  bool stopped_ = false;
};

/// A follower's part (ranks other than 0): makes the leader's changes to a generator of its own until the leader
/// stops. Throws when a broadcast fails (the leader gone or past the collectives' timeout).
void follow_leader(const lm::LoadedModel& model, const lm::BatchOptions& options, const distributed::Group& group);

}  // namespace nuvec::serve
