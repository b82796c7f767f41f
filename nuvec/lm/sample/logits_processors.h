#pragma once

// The stages of `sample` that reshape the logits before the draw, exposed for callers that assemble their own
// pipeline (and for tests): the logit bias and penalties, and the top-k, top-p and min-p filters.

#include <span>

#include "nuvec/core/array.h"
#include "nuvec/lm/sample/sampling.h"

namespace nuvec::lm {

/// Logits (B, V) as float32 after row b's logit bias and then its repetition, presence and frequency penalties
/// (rows[b]'s parameters and history), with -inf where its mask of allowed tokens has 0. Only the ids a row's bias,
/// history or mask names change.
array process_logits(const array& logits, std::span<const SamplingRow> rows);

/// `scaled` (B, V) float32 (processed logits over the temperature) with -inf at the tokens that row b's top-k, then
/// top-p (over the top-k survivors), then min-p filters drop. Greedy rows pass unchanged.
array filter_logits(const array& scaled, std::span<const SamplingRow> rows);

namespace detail {

/// Entries of each row of x (B, V) that include the row's `count` largest values (ties with the count-th included
/// or not), with their ids, in ascending id order.
struct Candidates {
  array values;  // (B, W), W >= count; padding past the vocabulary holds -inf
  array ids;     // (B, W) int32 (the padding's are >= V)
};
/// The whole rows when `count` is a sizeable part of V; otherwise the blocks of 64 entries with the `count` largest
/// block maxima (ties to the lowest block), which hold the `count` largest values and, among tied values, the
/// lowest ids: a max pass and a partition of V / 64 maxima instead of a partition or sort of V values.
Candidates largest_candidates(const array& x, int count);

/// Throws unless `logits` is a floating (B, V) array with one row per entry of `rows`, each with a sampler made for V.
void check_batch(const array& logits, std::span<const SamplingRow> rows, const char* op);
}  // namespace detail

}  // namespace nuvec::lm
