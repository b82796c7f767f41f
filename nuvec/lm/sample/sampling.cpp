// Sampling parameters, per-sequence keys, and the sampling step: penalties, temperature, filters and an inverse-CDF
// draw over the whole batch, with one uniform number per row from that row's own key.

#include "nuvec/lm/sample/sampling.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <utility>

#include "nuvec/core/error.h"
#include "nuvec/core/eval.h"
#include "nuvec/core/ops.h"
#include "nuvec/core/random.h"
#include "nuvec/core/shape.h"
#include "nuvec/core/threefry.h"
#include "nuvec/lm/sample/logits_processors.h"

namespace nuvec::lm {

namespace {

template <class T>
[[noreturn]] void reject(const char* field, const char* expected, T value) {
  std::ostringstream message;
  message << "[SamplingParams] " << field << " must be " << expected << "; got " << value << ".";
  throw_invalid(message.str());
}

/// Reads an evaluated array's elements in row-major order.
template <class T>
std::vector<T> host_values(const array& a) {
  const T* data = a.data<T>();
  return {data, data + a.size()};
}

/// The rows' temperatures as a (B, 1) column; greedy rows get 1 (their filters are off and they take the argmax).
array temperatures(std::span<const SamplingRow> rows) {
  std::vector<float> values;
  for (const auto& row : rows) {
    values.push_back(row.sampler->greedy() ? 1.0F : row.sampler->params().temperature);
  }
  return array(values.begin(), Shape{static_cast<int32_t>(values.size()), 1}, float32);
}

/// Inverse-CDF draws: row b takes the first token whose running mass (in vocabulary order, float64) passes u_b times
/// the row's total, u_b from the row's own key, so a row's draw never depends on the other rows. Greedy rows take the
/// argmax. Returns (B, 1) uint32.
array draw(const array& processed, std::span<const SamplingRow> rows) {
  auto filtered = filter_logits(processed / temperatures(rows), rows);
  auto weights = astype(exp(filtered - max(filtered, -1, true)), float64);
  auto running = cumsum(weights, -1);
  std::vector<double> uniforms;
  std::vector<uint8_t> greedy;
  for (const auto& row : rows) {
    greedy.push_back(row.sampler->greedy() ? 1 : 0);
    uniforms.push_back(row.sampler->greedy() ? 0.5 : row.sampler->next_uniform());
  }
  const Shape column{static_cast<int32_t>(rows.size()), 1};
  auto target = array(uniforms.begin(), column, float64) * slice(running, {0, processed.shape(1) - 1}, running.shape());
  // u < 1 keeps the target below the total, so some entry passes it, and the first that does has a positive weight.
  auto sampled = astype(sum(running <= target, -1, true), uint32);
  if (std::ranges::none_of(greedy, [](uint8_t g) { return g != 0; })) {
    return sampled;
  }
  return where(array(greedy.begin(), column, bool_), argmax(processed, -1, true), sampled);
}

/// Row b's ids so far, prompt then generated, as (N) int32.
array history_ids(const TokenHistory& history) {
  std::vector<int32_t> ids(history.prompt.begin(), history.prompt.end());
  ids.insert(ids.end(), history.generated.begin(), history.generated.end());
  return array(ids.begin(), Shape{static_cast<int32_t>(ids.size())}, int32);
}

/// `raw` (B, V) float32 after each row's own processors (rows without any pass unchanged).
array run_processors(const array& raw, std::span<const SamplingRow> rows) {
  const int32_t vocab_size = raw.shape(1);
  std::vector<array> out;
  for (size_t b = 0; b < rows.size(); ++b) {
    const auto r = static_cast<int32_t>(b);
    array row = slice(raw, {r, 0}, {r + 1, vocab_size});
    const auto& processors = rows[b].sampler->hooks().processors;
    if (!processors.empty()) {
      const array ids = history_ids(rows[b].history);
      for (const auto& processor : processors) {
        row = processor(ids, row);
        if (row.shape() != Shape{1, vocab_size} || !is_floating(row.dtype())) {
          std::ostringstream message;
          message << "[sample] A logits processor must return floating logits of shape (1, " << vocab_size
                  << "); got shape " << row.shape() << " and dtype " << row.dtype() << ".";
          throw_invalid(message.str());
        }
        row = astype(row, float32);
      }
    }
    out.push_back(row);
  }
  return concatenate(out, 0);
}

/// The choice of each row of `processed` (B, V) as (B, 1) uint32: a row with a chooser takes its chooser's token,
/// given the row's log-probabilities (read back at once, to check it), the others as `draw` chooses.
array choose_with_hooks(const array& processed, std::span<const SamplingRow> rows) {
  const int32_t vocab_size = processed.shape(1);
  std::vector<array> chosen;
  for (size_t b = 0; b < rows.size(); ++b) {
    const auto r = static_cast<int32_t>(b);
    const array row = slice(processed, {r, 0}, {r + 1, vocab_size});
    const TokenChooser& chooser = rows[b].sampler->hooks().chooser;
    if (!chooser) {
      chosen.push_back(draw(row, rows.subspan(b, 1)));
      continue;
    }
    const array token = chooser(row - logsumexp(row, -1, true));
    if (token.size() != 1 || !is_integer(token.dtype())) {
      std::ostringstream message;
      message << "[sample] A sampler must return one integer token; got shape " << token.shape() << " and dtype "
              << token.dtype() << ".";
      throw_invalid(message.str());
    }
    const auto id = astype(token, int64).item<int64_t>();
    if (id < 0 || id >= vocab_size) {
      throw_invalid("[sample] A sampler chose token " + std::to_string(id) + ", outside the vocabulary of " +
                    std::to_string(vocab_size) + ".");
    }
    chosen.push_back(array({static_cast<uint32_t>(id)}, {1, 1}, uint32));
  }
  return concatenate(chosen, 0);
}

}  // namespace

void SamplingParams::validate(int vocab_size) const {
  if (!(std::isfinite(temperature) && temperature >= 0.0F)) {
    reject("temperature", "a finite number >= 0 (0: greedy)", temperature);
  }
  if (top_k < 0) {
    reject("top_k", ">= 0 (0: off)", top_k);
  }
  if (!(top_p > 0.0F && top_p <= 1.0F)) {
    reject("top_p", "in (0, 1] (1: off)", top_p);
  }
  if (!(min_p >= 0.0F && min_p <= 1.0F)) {
    reject("min_p", "in [0, 1] (0: off)", min_p);
  }
  if (min_tokens_to_keep < 1) {
    reject("min_tokens_to_keep", ">= 1", min_tokens_to_keep);
  }
  if (!(std::isfinite(repetition_penalty) && repetition_penalty > 0.0F)) {
    reject("repetition_penalty", "a finite number > 0 (1: off)", repetition_penalty);
  }
  if (repetition_context_size < 0) {
    reject("repetition_context_size", ">= 0", repetition_context_size);
  }
  if (!std::isfinite(presence_penalty)) {
    reject("presence_penalty", "finite", presence_penalty);
  }
  if (!std::isfinite(frequency_penalty)) {
    reject("frequency_penalty", "finite", frequency_penalty);
  }
  if (top_logprobs < 0 || top_logprobs > max_top_logprobs) {
    reject("top_logprobs", ("in [0, " + std::to_string(max_top_logprobs) + "]").c_str(), top_logprobs);
  }
  for (auto [id, bias] : logit_bias) {
    if (id < 0 || id >= vocab_size) {
      std::ostringstream message;
      message << "[SamplingParams] logit_bias ids must be in [0, " << vocab_size << "); got " << id << ".";
      throw_invalid(message.str());
    }
    if (!std::isfinite(bias)) {
      std::ostringstream message;
      message << "[SamplingParams] logit_bias values must be finite; got " << bias << " for id " << id << ".";
      throw_invalid(message.str());
    }
  }
}

Sampler::Sampler(SamplingParams params, int vocab_size) : params_(std::move(params)), vocab_size_(vocab_size) {
  if (vocab_size <= 0) {
    throw_invalid("[Sampler] The vocabulary size must be positive; got " + std::to_string(vocab_size) + ".");
  }
  params_.validate(vocab_size);
  if (params_.seed) {
    key_ = {static_cast<uint32_t>(*params_.seed >> 32), static_cast<uint32_t>(*params_.seed)};
  } else {
    auto words = random::bits({2});
    words.eval();
    key_ = {words.data<uint32_t>()[0], words.data<uint32_t>()[1]};
  }
}

double Sampler::next_uniform() {
  // split(key) on the host, as random::split computes it: the first key from the counters (0, 2) and (1, 3)'s
  // first words, the second from their second words.
  uint32_t a0 = 0;
  uint32_t a1 = 2;
  uint32_t b0 = 1;
  uint32_t b1 = 3;
  nuvec::detail::threefry2x32(key_[0], key_[1], a0, a1);
  nuvec::detail::threefry2x32(key_[0], key_[1], b0, b1);
  key_ = {a0, b0};
  // The first word of random::bits({2}, 4, draw key): the counters (0, 1) under the key (a1, b1).
  uint32_t word = 0;
  uint32_t unused = 1;
  nuvec::detail::threefry2x32(a1, b1, word, unused);
  return (static_cast<double>(word) + 0.5) * 0x1p-32;
}

SampledTokens Sampler::sample(const array& logits, TokenHistory history) {
  if (logits.ndim() != 1 && !(logits.ndim() == 2 && logits.shape(0) == 1)) {
    throw_invalid("[Sampler::sample] Expected logits of shape (V) or (1, V); got shape " +
                  shape_string(logits.shape()) + ".");
  }
  const SamplingRow row{this, history};
  return lm::sample(reshape(logits, {1, logits.shape(-1)}), std::span(&row, 1));
}

SampledTokens sample(const array& logits, std::span<const SamplingRow> rows) {
  detail::check_batch(logits, rows, "sample");
  const int32_t batch = logits.shape(0);
  const int32_t vocab_size = logits.shape(1);
  auto raw = astype(logits, float32);
  auto log_total = logsumexp(raw, -1, true);
  const bool hooked = std::ranges::any_of(rows, [](const SamplingRow& row) { return !row.sampler->hooks().empty(); });
  auto processed = process_logits(hooked ? run_processors(raw, rows) : logits, rows);
  const bool all_greedy = std::ranges::all_of(rows, [](const SamplingRow& row) { return row.sampler->greedy(); });
  auto chosen = all_greedy ? argmax(processed, -1, true)
                : hooked   ? choose_with_hooks(processed, rows)
                           : draw(processed, rows);

  std::vector<int> top_counts;
  for (const auto& row : rows) {
    top_counts.push_back(std::min(row.sampler->params().top_logprobs, vocab_size));
  }
  const int n = top_counts.empty() ? 0 : *std::ranges::max_element(top_counts);
  auto top_tokens = zeros({batch, 0}, int32);
  auto top_logprobs = zeros({batch, 0}, float32);
  if (n > 0) {
    // The n largest (ties to the lowest id: the candidates ascend by id and argpartition orders equal values by
    // position), sorted by id, then stably by descending log-probability.
    auto candidates = detail::largest_candidates(raw, n);
    auto picked = sort(slice(argpartition(-candidates.values, n - 1, -1), {0, 0}, {batch, n}), -1);
    auto ids = take_along_axis(candidates.ids, picked, 1);
    auto values = take_along_axis(raw, ids, 1) - log_total;
    auto order = argsort(-values, -1);
    top_tokens = take_along_axis(ids, order, 1);
    top_logprobs = take_along_axis(values, order, 1);
  }
  return SampledTokens{
      .tokens = reshape(astype(chosen, int32), {batch}),
      .logprobs = reshape(take_along_axis(raw, chosen, 1) - log_total, {batch}),
      .top_tokens = top_tokens,
      .top_logprobs = top_logprobs,
      .top_counts = std::move(top_counts),
  };
}

std::vector<SampledToken> SampledTokens::read() const {
  std::vector<array> outputs{contiguous(tokens), contiguous(logprobs), contiguous(top_tokens),
                             contiguous(top_logprobs)};
  eval(outputs);
  auto ids = host_values<int32_t>(outputs[0]);
  auto chosen_logprobs = host_values<float>(outputs[1]);
  auto top_ids = host_values<int32_t>(outputs[2]);
  auto top_values = host_values<float>(outputs[3]);
  const auto width = static_cast<std::size_t>(top_tokens.shape(1));
  std::vector<SampledToken> result(ids.size());
  for (std::size_t b = 0; b < ids.size(); ++b) {
    result[b].token = ids[b];
    result[b].logprob = chosen_logprobs[b];
    for (std::size_t i = 0; i < static_cast<std::size_t>(top_counts[b]); ++i) {
      result[b].top.push_back({top_ids[b * width + i], top_values[b * width + i]});
    }
  }
  return result;
}

}  // namespace nuvec::lm
