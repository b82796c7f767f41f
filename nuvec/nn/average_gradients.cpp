#include "nuvec/nn/average_gradients.h"

#include <map>

#include "nuvec/core/ops.h"
#include "nuvec/distributed/ops.h"

namespace nuvec::nn {

Params average_gradients(const Params& gradients, std::optional<distributed::Group> group,
                         std::ptrdiff_t all_reduce_size) {
  const distributed::Group g = group ? *group : distributed::detail::default_group();
  if (g.size() == 1) {
    return gradients;
  }
  const array count(static_cast<float>(g.size()));
  Params averaged(gradients);
  std::vector<size_t> bucket;
  std::ptrdiff_t bucket_bytes = 0;
  const auto flush = [&] {
    if (bucket.empty()) {
      return;
    }
    std::vector<array> flat;
    Shape offsets;
    int offset = 0;
    for (size_t i : bucket) {
      flat.push_back(reshape(gradients[i].second, {-1}));
      offset += static_cast<int>(gradients[i].second.size());
      offsets.push_back(offset);
    }
    offsets.pop_back();
    const array& first = gradients[bucket[0]].second;
    const array mean = astype(distributed::all_sum(concatenate(flat, 0), g) / astype(count, first.dtype()), first.dtype());
    const std::vector<array> parts = split(mean, offsets, 0);
    for (size_t k = 0; k < bucket.size(); ++k) {
      averaged[bucket[k]].second = reshape(parts[k], gradients[bucket[k]].second.shape());
    }
    bucket.clear();
    bucket_bytes = 0;
  };
  // One bucket per dtype at a time, in the gradients' order (the same on every rank).
  std::map<Dtype::Val, std::vector<size_t>> by_dtype;
  for (size_t i = 0; i < gradients.size(); ++i) {
    by_dtype[gradients[i].second.dtype().val].push_back(i);
  }
  for (const auto& [dtype, indices] : by_dtype) {
    for (size_t i : indices) {
      bucket.push_back(i);
      bucket_bytes += static_cast<std::ptrdiff_t>(gradients[i].second.nbytes());
      if (bucket_bytes >= all_reduce_size) {
        flush();
      }
    }
    flush();
  }
  return averaged;
}

}  // namespace nuvec::nn
