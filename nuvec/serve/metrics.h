#pragma once

// Prometheus metrics per served model, in the text exposition format with a `model` label: requests running and
// waiting, KV-cache use and preemptions, prompt and generated tokens, successes by finish reason, and histograms of
// time to first token, time between tokens, end-to-end latency and queue time (vLLM's set, named nuvec_*).

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace nuvec::serve {

/// Counts of observations per upper bound (cumulative when rendered), their sum and count.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  /// Appends the _bucket, _sum and _count lines of `name` with `labels` ("model=\"x\"").
  void render(std::string& out, const std::string& name, const std::string& labels) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // one per bound, then +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

/// One model's metrics; every method is thread-safe.
class ModelMetrics {
 public:
  ModelMetrics();

  void set_queue(int running, int waiting);
  void add_prompt_tokens(int count);
  /// The prefix cache's prompt tokens looked up and found so far, and the positions it holds.
  void set_prefix_cache(uint64_t queries, uint64_t hits, int positions);
  /// The share of the KV cache's blocks sequences hold (0 to 1), and the sequences preempted so far.
  void set_kv_cache(double usage, uint64_t preemptions);
  /// A generated token; `from_draft`: a draft model proposed it and the model kept it (speculative decoding).
  void add_generated_token(bool from_draft = false);
  void observe_queue_time(double seconds);
  void observe_first_token(double seconds);
  void observe_between_tokens(double seconds);
  /// A request that ended with `finish_reason` ("stop", "length"), after `seconds` in all.
  void finish(const std::string& finish_reason, double seconds);

  /// Appends this model's samples of every metric family to `families` (name -> lines).
  void render(std::map<std::string, std::string>& families, const std::string& model) const;

 private:
  mutable std::mutex mutex_;
  int running_ = 0;
  int waiting_ = 0;
  uint64_t prompt_tokens_ = 0;
  uint64_t generated_tokens_ = 0;
  uint64_t draft_tokens_ = 0;
  uint64_t prefix_queries_ = 0;
  uint64_t prefix_hits_ = 0;
  int prefix_positions_ = 0;
  double kv_cache_usage_ = 0;
  uint64_t preemptions_ = 0;
  std::map<std::string, uint64_t> successes_;
  Histogram queue_time_;
  Histogram first_token_;
  Histogram between_tokens_;
  Histogram latency_;
};

/// The metrics of every model, by name.
class Metrics {
 public:
  /// The metrics of `model`, made on first use; the reference stays valid.
  ModelMetrics& model(const std::string& name);
  /// The whole exposition text.
  [[nodiscard]] std::string render() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<ModelMetrics>> models_;
};

}  // namespace nuvec::serve
