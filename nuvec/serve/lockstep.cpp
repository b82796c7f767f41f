#include "nuvec/serve/lockstep.h"

#include <cstring>
#include <exception>
#include <type_traits>
#include <utility>

#include "nuvec/core/error.h"
#include "nuvec/core/eval.h"
#include "nuvec/core/ops.h"
#include "nuvec/distributed/ops.h"

namespace nuvec::serve {

namespace {

enum class Change : uint8_t { insert, next, remove, reset, keep_alive, stop };

/// Followers hear from an idle leader this often, far below the collectives' timeout.
constexpr std::chrono::seconds keep_alive_interval{1};

/// A change in bytes: its kind, then its fields. Every rank runs the same build, so plain values go as they are.
class Writer {
 public:
  explicit Writer(Change change) { put(change); }

  template <class T>
  requires std::is_trivially_copyable_v<T>
  void put(const T& value) { append(&value, sizeof(T)); }
  template <class T>
  void put(const std::optional<T>& value) {
    put(value.has_value());
    if (value) {
      put(*value);
    }
  }
  void put(const std::string& text) {
    put(text.size());
    append(text.data(), text.size());
  }
  template <class T>
  void put(const std::vector<T>& values) {
    put(values.size());
    for (const T& value : values) {
      put(value);
    }
  }

  [[nodiscard]] const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  void append(const void* data, size_t size) {
    const size_t at = bytes_.size();
    bytes_.resize(at + size);
    if (size > 0) {
      std::memcpy(bytes_.data() + at, data, size);
    }
  }

  std::vector<uint8_t> bytes_;
};

class Reader {
 public:
  explicit Reader(const std::vector<uint8_t>& bytes) : bytes_(bytes) {}

  template <class T>
  requires std::is_trivially_copyable_v<T>
  void get(T& value) { take(&value, sizeof(T)); }
  template <class T>
  void get(std::optional<T>& value) {
    bool has = false;
    get(has);
    value.reset();
    if (has) {
      value.emplace();
      get(*value);
    }
  }
  void get(std::string& text) {
    size_t size = 0;
    get(size);
    text.resize(size);
    take(text.data(), size);
  }
  template <class T>
  void get(std::vector<T>& values) {
    size_t size = 0;
    get(size);
    values.resize(size);
    for (T& value : values) {
      get(value);
    }
  }

 private:
  void take(void* out, size_t size) {
    if (at_ + size > bytes_.size()) {
      throw_internal("[serve] a change from the leader rank ends early (" + std::to_string(bytes_.size()) +
                     " bytes); the ranks run different builds?");
    }
    std::memcpy(out, bytes_.data() + at_, size);
    at_ += size;
  }

  const std::vector<uint8_t>& bytes_;
  size_t at_ = 0;
};

/// The fields of GenerateOptions a batch generator reads; read_options reads them in the same order.
void write_options(Writer& w, const lm::GenerateOptions& o) {
  if (o.constraint || o.prompt_cache != nullptr || o.draft_model != nullptr) {
    throw_unsupported(
        "[serve] a sharded model takes no response_format constraint, prompt cache or draft model: they live in the "
        "leader rank's memory alone.");
  }
  const lm::SamplingParams& s = o.sampling;
  w.put(o.max_tokens);
  w.put(s.temperature);
  w.put(s.top_k);
  w.put(s.top_p);
  w.put(s.min_p);
  w.put(s.min_tokens_to_keep);
  w.put(s.repetition_penalty);
  w.put(s.repetition_context_size);
  w.put(s.presence_penalty);
  w.put(s.frequency_penalty);
  w.put(s.logit_bias.size());
  for (const auto& [id, bias] : s.logit_bias) {
    w.put(id);
    w.put(bias);
  }
  w.put(s.seed);
  w.put(s.top_logprobs);
  w.put(o.stop_strings);
  w.put(o.stop_ids);
  w.put(o.skip_special_tokens);
  w.put(o.prefill_chunk_size);
  w.put(o.max_kv_size);
  w.put(o.num_draft);
  w.put(o.overlap_steps);
}

lm::GenerateOptions read_options(Reader& r) {
  lm::GenerateOptions o;
  lm::SamplingParams& s = o.sampling;
  r.get(o.max_tokens);
  r.get(s.temperature);
  r.get(s.top_k);
  r.get(s.top_p);
  r.get(s.min_p);
  r.get(s.min_tokens_to_keep);
  r.get(s.repetition_penalty);
  r.get(s.repetition_context_size);
  r.get(s.presence_penalty);
  r.get(s.frequency_penalty);
  size_t biases = 0;
  r.get(biases);
  for (size_t i = 0; i < biases; ++i) {
    int32_t id = 0;
    float bias = 0;
    r.get(id);
    r.get(bias);
    s.logit_bias[id] = bias;
  }
  r.get(s.seed);
  r.get(s.top_logprobs);
  r.get(o.stop_strings);
  r.get(o.stop_ids);
  r.get(o.skip_special_tokens);
  r.get(o.prefill_chunk_size);
  r.get(o.max_kv_size);
  r.get(o.num_draft);
  r.get(o.overlap_steps);
  return o;
}

/// Rank 0's message to every rank, as two all-sums to which the others add zeros: its length, then its bytes.
std::vector<uint8_t> broadcast(const std::vector<uint8_t>& message, const distributed::Group& group) {
  const bool leader = group.rank() == 0;
  array length = distributed::all_sum(array(leader ? static_cast<int64_t>(message.size()) : int64_t{0}), group);
  length.eval();
  const auto size = static_cast<size_t>(length.item<int64_t>());
  if (size == 0) {
    return {};
  }
  const std::vector<uint8_t> zeros(leader ? 0 : size);
  const std::vector<uint8_t>& mine = leader ? message : zeros;
  array bytes = distributed::all_sum(array(mine.begin(), Shape{static_cast<int>(size)}, uint8), group);
  eval(bytes);
  const uint8_t* data = bytes.data<uint8_t>();
  return {data, data + size};
}

}  // namespace

LockstepGenerator::LockstepGenerator(const lm::LoadedModel& model, lm::BatchOptions options,
                                     std::optional<distributed::Group> group)
    : model_(model),
      options_(std::move(options)),
      group_(group && group->size() > 1 ? group : std::nullopt),
      generator_(std::make_unique<lm::BatchGenerator>(model, options_)) {}

LockstepGenerator::~LockstepGenerator() { stop(); }

void LockstepGenerator::announce(const std::vector<uint8_t>& message) {
  if (!group_) {
    return;
  }
  if (!failure_.empty()) {
    throw_error(ErrorKind::io, failure_);
  }
  try {
    broadcast(message, *group_);
  } catch (const std::exception& e) {
    failure_ = std::string("[serve] the ranks serving the sharded model lost each other: ").append(e.what());
    throw_error(ErrorKind::io, failure_);
  }
  last_announced_ = std::chrono::steady_clock::now();
}

void LockstepGenerator::announce_quietly(const std::vector<uint8_t>& message) {
  try {
    announce(message);
  } catch (const std::exception&) {
    // Kept in failure_: the next change reports it.
  }
}

uint64_t LockstepGenerator::insert(const std::vector<int32_t>& prompt, const lm::GenerateOptions& options) {
  if (group_) {
    Writer w(Change::insert);
    w.put(prompt);
    write_options(w, options);
    announce(w.bytes());
  }
  return generator_->insert(prompt, options);
}

std::vector<lm::BatchResponse> LockstepGenerator::next() {
  announce(Writer(Change::next).bytes());
  return generator_->next();
}

bool LockstepGenerator::remove(uint64_t uid) {
  if (group_) {
    Writer w(Change::remove);
    w.put(uid);
    announce(w.bytes());
  }
  return generator_->remove(uid);
}

void LockstepGenerator::reset() {
  announce_quietly(Writer(Change::reset).bytes());
  generator_ = std::make_unique<lm::BatchGenerator>(model_, options_);
}

void LockstepGenerator::keep_alive() {
  if (group_ && std::chrono::steady_clock::now() - last_announced_ >= keep_alive_interval) {
    announce_quietly(Writer(Change::keep_alive).bytes());
  }
}

void LockstepGenerator::stop() {
  if (group_ && !stopped_) {
    stopped_ = true;
    announce_quietly(Writer(Change::stop).bytes());
  }
}

void follow_leader(const lm::LoadedModel& model, const lm::BatchOptions& options, const distributed::Group& group) {
  auto generator = std::make_unique<lm::BatchGenerator>(model, options);
  for (;;) {
    const std::vector<uint8_t> message = broadcast({}, group);
    Reader r(message);
    Change change{};
    r.get(change);
    // A change the leader's generator refused (a prompt too long, a failed step) fails here the same way; the leader
    // answers for it, and a fresh generator follows a failed step.
    try {
      switch (change) {
        case Change::insert: {
          std::vector<int32_t> prompt;
          r.get(prompt);
          generator->insert(prompt, read_options(r));
          break;
        }
        case Change::next:
          generator->next();
          break;
        case Change::remove: {
          uint64_t uid = 0;
          r.get(uid);
          generator->remove(uid);
          break;
        }
        case Change::reset:
          generator = std::make_unique<lm::BatchGenerator>(model, options);
          break;
        case Change::keep_alive:
          break;
        case Change::stop:
          return;
      }
    } catch (const nuvec::error&) {
      continue;
    }
  }
}

}  // namespace nuvec::serve
