#include "nuvec/serve/metrics.h"

#include <algorithm>
#include <sstream>
#include <utility>

namespace nuvec::serve {

namespace {

/// Latency buckets in seconds: from a fast token on a GPU to a long generation on a CPU.
std::vector<double> latency_bounds() {
  return {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0};
}

std::string number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

/// Label values escape backslashes, quotes and newlines.
std::string escape(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out.append("\\n");
    } else {
      out.push_back(c);
    }
  }
  return out;
}

struct Family {
  const char* name;
  const char* type;
  const char* help;
};

constexpr Family families_in_order[] = {
    {"nuvec_requests_running", "gauge", "Requests generating now."},
    {"nuvec_requests_waiting", "gauge", "Requests waiting for a place in the batch."},
    {"nuvec_prompt_tokens_total", "counter", "Prompt tokens processed."},
    {"nuvec_generation_tokens_total", "counter", "Tokens generated."},
    {"nuvec_spec_decode_accepted_tokens_total", "counter",
     "Generated tokens a draft model proposed and the model kept (speculative decoding)."},
    {"nuvec_kv_cache_usage_perc", "gauge", "Share of the KV cache's blocks that sequences hold (1 = full)."},
    {"nuvec_num_preemptions_total", "counter",
     "Sequences sent back to the queue, to be computed again, because the KV cache was full."},
    {"nuvec_prefix_cache_queries_total", "counter", "Prompt tokens looked up in the prefix cache."},
    {"nuvec_prefix_cache_hits_total", "counter", "Prompt tokens the prefix cache held (not computed again)."},
    {"nuvec_prefix_cache_positions", "gauge", "Prompt positions the prefix cache holds."},
    {"nuvec_request_success_total", "counter", "Requests finished, by finish reason."},
    {"nuvec_request_queue_time_seconds", "histogram", "Time from arrival to the start of generation."},
    {"nuvec_time_to_first_token_seconds", "histogram", "Time from arrival to the first generated token."},
    {"nuvec_time_between_tokens_seconds", "histogram", "Time between consecutive tokens of a sequence."},
    {"nuvec_e2e_request_latency_seconds", "histogram", "Time from arrival to the last token."},
};

}  // namespace

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  const auto at = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  ++counts_[static_cast<size_t>(at)];
  sum_ += value;
  ++count_;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& labels) const {
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    const std::string le = i < bounds_.size() ? number(bounds_[i]) : "+Inf";
    out.append(name).append("_bucket{").append(labels).append(",le=\"").append(le).append("\"} ");
    out.append(std::to_string(cumulative)).append("\n");
  }
  out.append(name).append("_sum{").append(labels).append("} ").append(number(sum_)).append("\n");
  out.append(name).append("_count{").append(labels).append("} ").append(std::to_string(count_)).append("\n");
}

ModelMetrics::ModelMetrics()
    : queue_time_(latency_bounds()),
      first_token_(latency_bounds()),
      between_tokens_(latency_bounds()),
      latency_(latency_bounds()) {}

void ModelMetrics::set_queue(int running, int waiting) {
  std::lock_guard lock(mutex_);
  running_ = running;
  waiting_ = waiting;
}

void ModelMetrics::add_prompt_tokens(int count) {
  std::lock_guard lock(mutex_);
  prompt_tokens_ += static_cast<uint64_t>(count);
}

void ModelMetrics::set_prefix_cache(uint64_t queries, uint64_t hits, int positions) {
  std::lock_guard lock(mutex_);
  prefix_queries_ = queries;
  prefix_hits_ = hits;
  prefix_positions_ = positions;
}

void ModelMetrics::set_kv_cache(double usage, uint64_t preemptions) {
  std::lock_guard lock(mutex_);
  kv_cache_usage_ = usage;
  preemptions_ = preemptions;
}

void ModelMetrics::add_generated_token(bool from_draft) {
  std::lock_guard lock(mutex_);
  ++generated_tokens_;
  draft_tokens_ += from_draft ? 1 : 0;
}

void ModelMetrics::observe_queue_time(double seconds) {
  std::lock_guard lock(mutex_);
  queue_time_.observe(seconds);
}

void ModelMetrics::observe_first_token(double seconds) {
  std::lock_guard lock(mutex_);
  first_token_.observe(seconds);
}

void ModelMetrics::observe_between_tokens(double seconds) {
  std::lock_guard lock(mutex_);
  between_tokens_.observe(seconds);
}

void ModelMetrics::finish(const std::string& finish_reason, double seconds) {
  std::lock_guard lock(mutex_);
  ++successes_[finish_reason];
  latency_.observe(seconds);
}

void ModelMetrics::render(std::map<std::string, std::string>& families, const std::string& model) const {
  std::lock_guard lock(mutex_);
  const std::string labels = "model=\"" + escape(model) + "\"";
  auto sample = [&](const char* name, const std::string& value) {
    families[name].append(name).append("{").append(labels).append("} ").append(value).append("\n");
  };
  sample("nuvec_requests_running", std::to_string(running_));
  sample("nuvec_requests_waiting", std::to_string(waiting_));
  sample("nuvec_prompt_tokens_total", std::to_string(prompt_tokens_));
  sample("nuvec_generation_tokens_total", std::to_string(generated_tokens_));
  sample("nuvec_spec_decode_accepted_tokens_total", std::to_string(draft_tokens_));
  sample("nuvec_kv_cache_usage_perc", number(kv_cache_usage_));
  sample("nuvec_num_preemptions_total", std::to_string(preemptions_));
  sample("nuvec_prefix_cache_queries_total", std::to_string(prefix_queries_));
  sample("nuvec_prefix_cache_hits_total", std::to_string(prefix_hits_));
  sample("nuvec_prefix_cache_positions", std::to_string(prefix_positions_));
  for (const char* reason : {"stop", "length"}) {
    auto it = successes_.find(reason);
    const uint64_t count = it == successes_.end() ? 0 : it->second;
    families["nuvec_request_success_total"]
        .append("nuvec_request_success_total{")
        .append(labels)
        .append(",finish_reason=\"")
        .append(reason)
        .append("\"} ")
        .append(std::to_string(count))
        .append("\n");
  }
  queue_time_.render(families["nuvec_request_queue_time_seconds"], "nuvec_request_queue_time_seconds", labels);
  first_token_.render(families["nuvec_time_to_first_token_seconds"], "nuvec_time_to_first_token_seconds", labels);
  between_tokens_.render(families["nuvec_time_between_tokens_seconds"], "nuvec_time_between_tokens_seconds", labels);
  latency_.render(families["nuvec_e2e_request_latency_seconds"], "nuvec_e2e_request_latency_seconds", labels);
}

ModelMetrics& Metrics::model(const std::string& name) {
  std::lock_guard lock(mutex_);
  auto& slot = models_[name];
  if (!slot) {
    slot = std::make_unique<ModelMetrics>();
  }
  return *slot;
}

std::string Metrics::render() const {
  std::map<std::string, std::string> families;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [name, metrics] : models_) {
      metrics->render(families, name);
    }
  }
  std::string out;
  for (const Family& family : families_in_order) {
    out.append("# HELP ").append(family.name).append(" ").append(family.help).append("\n");
    out.append("# TYPE ").append(family.name).append(" ").append(family.type).append("\n");
    out.append(families[family.name]);
  }
  return out;
}

}  // namespace nuvec::serve
