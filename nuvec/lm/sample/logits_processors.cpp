// The logit bias and penalties as one sparse update per row, and the top-k, top-p and min-p filters as one
// threshold per row: a filter keeps the tokens whose scaled logit is at least its threshold, so a batch with
// different settings per row is filtered by a few whole-batch passes.

#include "nuvec/lm/sample/logits_processors.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "nuvec/core/error.h"
#include "nuvec/core/op_prefix.h"
#include "nuvec/core/ops.h"
#include "nuvec/core/shape.h"

namespace nuvec::lm {

namespace {

constexpr float negative_infinity = -std::numeric_limits<float>::infinity();

/// What a row does to one id's logit v: v + bias, then divided by `penalty` when positive (multiplied when not),
/// then minus presence + frequency * count.
struct Adjustment {
  float bias = 0.0F;
  float penalty = 1.0F;
  int count = 0;  // occurrences among the generated ids
};

void check_history_id(int32_t id, int vocab_size, std::size_t row) {
  if (id < 0 || id >= vocab_size) {
    std::ostringstream message;
    message << "[sample] Token ids in a history must be in [0, " << vocab_size << "); row " << row << " has " << id
            << ".";
    throw_invalid(message.str());
  }
}

/// The ids row `row`'s bias and penalties change, with what happens to each.
std::map<int32_t, Adjustment> row_adjustments(const SamplingRow& row, std::size_t index) {
  const SamplingParams& params = row.sampler->params();
  const int vocab_size = row.sampler->vocab_size();
  std::map<int32_t, Adjustment> adjustments;
  for (auto [id, bias] : params.logit_bias) {
    adjustments[id].bias = bias;
  }
  if (params.repetition_penalty != 1.0F) {
    // The window runs over the prompt and the generated ids as one sequence.
    auto window = static_cast<std::size_t>(params.repetition_context_size);
    auto from_generated = std::min(window, row.history.generated.size());
    auto from_prompt = std::min(window - from_generated, row.history.prompt.size());
    for (auto part : {row.history.prompt.last(from_prompt), row.history.generated.last(from_generated)}) {
      for (int32_t id : part) {
        check_history_id(id, vocab_size, index);
        adjustments[id].penalty = params.repetition_penalty;
      }
    }
  }
  if (params.presence_penalty != 0.0F || params.frequency_penalty != 0.0F) {
    for (int32_t id : row.history.generated) {
      check_history_id(id, vocab_size, index);
      ++adjustments[id].count;
    }
  }
  return adjustments;
}

/// `x` (B, V) with -inf where a row's mask forbids; no work unless some row has a mask.
array masked(const array& x, std::span<const SamplingRow> rows) {
  if (std::ranges::none_of(rows, [](const SamplingRow& row) { return row.allowed != nullptr; })) {
    return x;
  }
  const auto vocab_size = static_cast<size_t>(x.shape(1));
  std::vector<uint8_t> keep(rows.size() * vocab_size, 1);
  for (size_t b = 0; b < rows.size(); ++b) {
    if (rows[b].allowed != nullptr) {
      std::copy(rows[b].allowed->begin(), rows[b].allowed->end(),
                keep.begin() + static_cast<std::ptrdiff_t>(b * vocab_size));
    }
  }
  return where(array(keep.begin(), x.shape(), bool_), x, array(negative_infinity));
}

/// A (B, 1) column of per-row values.
template <class T>
array column(const std::vector<T>& values, Dtype dtype) {
  return array(values.begin(), Shape{static_cast<int32_t>(values.size()), 1}, dtype);
}

/// Each row's filter settings as (B, 1) columns, greedy rows and switched-off filters normalised to "off".
struct FilterSettings {
  std::vector<uint8_t> top_k_on;
  std::vector<int32_t> top_k_last;  // k - 1: the position of the k-th largest value
  std::vector<uint8_t> top_p_on;
  std::vector<float> top_p;
  std::vector<float> log_min_p;    // -inf when min-p is off
  std::vector<int32_t> keep_last;  // min_tokens_to_keep - 1 (0 when min-p is off)
  bool any_top_k = false;
  bool any_top_p = false;
  bool any_min_p = false;
  bool any_keep = false;
  int candidates = 0;  // how many of each row's largest values the thresholds read

  FilterSettings(std::span<const SamplingRow> rows, int vocab_size) {
    bool full_sort = false;  // some row needs top-p over the whole vocabulary
    for (const auto& row : rows) {
      const SamplingParams& params = row.sampler->params();
      const bool draws = !row.sampler->greedy();
      const int k = draws && params.top_k > 0 && params.top_k < vocab_size ? params.top_k : 0;
      const bool p_on = draws && params.top_p < 1.0F;
      const bool min_p_on = draws && params.min_p > 0.0F;
      const int keep = min_p_on ? std::min(params.min_tokens_to_keep, vocab_size) : 1;
      top_k_on.push_back(k > 0 ? 1 : 0);
      top_k_last.push_back(std::max(k - 1, 0));
      top_p_on.push_back(p_on ? 1 : 0);
      top_p.push_back(params.top_p);
      log_min_p.push_back(min_p_on ? std::log(params.min_p) : negative_infinity);
      keep_last.push_back(keep - 1);
      any_top_k |= k > 0;
      any_top_p |= p_on;
      any_min_p |= min_p_on;
      any_keep |= keep > 1;
      full_sort |= p_on && k == 0;
      candidates = std::max({candidates, k, keep});
    }
    if (full_sort) {
      candidates = vocab_size;
    }
  }
};

}  // namespace

namespace detail {

Candidates largest_candidates(const array& x, int count) {
  constexpr int block = 64;
  const int32_t batch = x.shape(0);
  const int32_t vocab_size = x.shape(1);
  if (count * block * 4 > vocab_size) {
    return {x, broadcast_to(arange(vocab_size), x.shape())};
  }
  // Pad to whole blocks with -inf, which no finite value loses to.
  const int32_t blocks = (vocab_size + block - 1) / block;
  auto padded = x;
  if (blocks * block != vocab_size) {
    padded = concatenate({x, full({batch, blocks * block - vocab_size}, array(negative_infinity))}, 1);
  }
  padded = reshape(padded, {batch, blocks, block});
  // A value among the count largest lies in a block whose maximum is too: a block left out has a maximum at most
  // that of each of the count chosen ones, so they hold count values ranking above all of its values.
  auto chosen = sort(slice(argpartition(-max(padded, -1), count - 1, -1), {0, 0}, {batch, count}), -1);
  auto values = reshape(take_along_axis(padded, expand_dims(chosen, -1), 1), {batch, count * block});
  auto ids = expand_dims(astype(chosen, int32) * array(block), -1) + arange(block);
  return {values, reshape(ids, {batch, count * block})};
}

void check_batch(const array& logits, std::span<const SamplingRow> rows, const char* op) {
  if (logits.ndim() != 2 || logits.shape(0) != static_cast<int32_t>(rows.size())) {
    std::ostringstream message;
    message << nuvec::detail::op_prefix(op)
            << "Expected logits of shape (B, V) with one row per sampler, B = " << rows.size() << "; got shape "
            << shape_string(logits.shape()) << ".";
    throw_invalid(message.str());
  }
  if (!is_floating(logits.dtype())) {
    throw_invalid(nuvec::detail::op_prefix(op) + "Logits must be a floating point type; got " +
                  std::string(dtype_name(logits.dtype())) + ".");
  }
  for (std::size_t b = 0; b < rows.size(); ++b) {
    if (rows[b].sampler == nullptr) {
      throw_invalid(nuvec::detail::op_prefix(op) + "Row " + std::to_string(b) + " has no sampler.");
    }
    if (rows[b].sampler->vocab_size() != logits.shape(1)) {
      std::ostringstream message;
      message << nuvec::detail::op_prefix(op) << "Row " << b << "'s sampler was made for a vocabulary of "
              << rows[b].sampler->vocab_size() << " but the logits have " << logits.shape(1) << ".";
      throw_invalid(message.str());
    }
    if (rows[b].allowed != nullptr && rows[b].allowed->size() != static_cast<size_t>(logits.shape(1))) {
      std::ostringstream message;
      message << nuvec::detail::op_prefix(op) << "Row " << b << "'s mask of allowed tokens has "
              << rows[b].allowed->size() << " entries but the logits have " << logits.shape(1) << ".";
      throw_invalid(message.str());
    }
  }
}

}  // namespace detail

array process_logits(const array& logits, std::span<const SamplingRow> rows) {
  detail::check_batch(logits, rows, "process_logits");
  auto x = astype(logits, float32);
  std::vector<std::map<int32_t, Adjustment>> adjustments;
  std::size_t width = 0;
  for (std::size_t b = 0; b < rows.size(); ++b) {
    adjustments.push_back(row_adjustments(rows[b], b));
    width = std::max(width, adjustments.back().size());
  }
  if (width == 0) {
    return masked(x, rows);
  }
  // Rows with fewer ids repeat their first one (the same value written twice); rows with none rewrite id 0 as it is.
  const auto batch = static_cast<int32_t>(rows.size());
  const Shape shape{batch, static_cast<int32_t>(width)};
  std::vector<int32_t> ids;
  std::vector<float> bias;
  std::vector<float> penalty;
  std::vector<float> subtract;
  for (std::size_t b = 0; b < rows.size(); ++b) {
    const SamplingParams& params = rows[b].sampler->params();
    auto emit = [&](int32_t id, const Adjustment& a) {
      ids.push_back(id);
      bias.push_back(a.bias);
      penalty.push_back(a.penalty);
      subtract.push_back(a.count > 0 ? params.presence_penalty + params.frequency_penalty * static_cast<float>(a.count)
                                     : 0.0F);
    };
    const auto& row = adjustments[b];
    for (const auto& [id, a] : row) {
      emit(id, a);
    }
    for (std::size_t i = row.size(); i < width; ++i) {
      if (row.empty()) {
        emit(0, Adjustment{});
      } else {
        emit(row.begin()->first, row.begin()->second);
      }
    }
  }
  auto index = array(ids.begin(), shape, int32);
  auto values = take_along_axis(x, index, 1) + array(bias.begin(), shape, float32);
  auto factor = array(penalty.begin(), shape, float32);
  values = where(values > array(0.0F), values / factor, values * factor);
  values = values - array(subtract.begin(), shape, float32);
  return masked(put_along_axis(x, index, values, 1), rows);
}

array filter_logits(const array& scaled, std::span<const SamplingRow> rows) {
  detail::check_batch(scaled, rows, "filter_logits");
  const FilterSettings settings(rows, scaled.shape(1));
  if (!settings.any_top_k && !settings.any_top_p && !settings.any_min_p) {
    return scaled;
  }
  const array minus_infinity(negative_infinity);
  auto threshold = full({scaled.shape(0), 1}, minus_infinity);
  auto row_max = max(scaled, -1, true);
  // Each row's largest values, descending: sorting only candidates keeps the sort short unless a row needs them all.
  std::optional<array> sorted;
  if (settings.any_top_k || settings.any_top_p || settings.any_keep) {
    sorted = flip(sort(detail::largest_candidates(scaled, settings.candidates).values, -1), -1);
  }
  if (settings.any_top_k) {
    auto kth = take_along_axis(*sorted, column(settings.top_k_last, int32), 1);
    threshold = where(column(settings.top_k_on, bool_), kth, threshold);
  }
  if (settings.any_top_p) {
    // Top-p keeps the tokens whose more probable top-k survivors weigh less than top_p: the cut is the last sorted
    // value whose exclusive running mass is below top_p. The total counts every survivor, including ties with the
    // k-th value that fell outside the candidates.
    auto survivor_mass = [&](const array& values) {
      return where(values >= threshold, exp(values - row_max), array(0.0F));
    };
    auto total = sum(survivor_mass(scaled), -1, true);
    auto before = cumsum(survivor_mass(*sorted), -1, false, false) / total;
    auto count = sum(before < column(settings.top_p, float32), -1, true);
    auto cut = take_along_axis(*sorted, count - array(1), 1);
    threshold = where(column(settings.top_p_on, bool_), maximum(threshold, cut), threshold);
  }
  if (settings.any_min_p) {
    // Min-p keeps logits within log(min_p) of the maximum, and at least the min_tokens_to_keep largest values.
    auto cut = row_max + column(settings.log_min_p, float32);
    if (settings.any_keep) {
      cut = minimum(cut, take_along_axis(*sorted, column(settings.keep_last, int32), 1));
    }
    threshold = maximum(threshold, cut);
  }
  return where(scaled >= threshold, scaled, minus_infinity);
}

}  // namespace nuvec::lm
