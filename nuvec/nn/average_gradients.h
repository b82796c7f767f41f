#pragma once

// Data-parallel training's gradient average (MLX's nn.average_gradients): the mean of each gradient over a group's
// processes, packed into buckets so that a few large all-reduces replace one small one per parameter.

#include <cstddef>
#include <optional>

#include "nuvec/distributed/distributed.h"
#include "nuvec/nn/module.h"

namespace nuvec::nn {

/// Each gradient averaged over `group` (default: the group init returned). Gradients of one dtype are flattened
/// into buckets of about `all_reduce_size` bytes (32 MiB, MLX's default), one all_sum each; 0 or less: one
/// all_sum per gradient. A group of one process returns the gradients unchanged.
Params average_gradients(const Params& gradients, std::optional<distributed::Group> group = std::nullopt,
                         std::ptrdiff_t all_reduce_size = std::ptrdiff_t{32} << 20);

}  // namespace nuvec::nn
