#pragma once

// The collectives, lazy ops on the graph as in MLX: each takes an optional group (default: the group init last
// returned) and a stream. On a group of one process the reductions and all_gather return their input.

#include <optional>

#include "nuvec/core/array.h"
#include "nuvec/core/device.h"
#include "nuvec/distributed/distributed.h"

namespace nuvec::distributed {

/// The element-wise sum of x over the group's processes (on bool: or).
array all_sum(const array& x, std::optional<Group> group = std::nullopt, StreamOrDevice s = {});
/// The processes' arrays concatenated along axis 0 in rank order (a scalar counts as shape (1)).
array all_gather(const array& x, std::optional<Group> group = std::nullopt, StreamOrDevice s = {});
/// The element-wise maximum over the group's processes (NaN wins; not for complex64).
array all_max(const array& x, std::optional<Group> group = std::nullopt, StreamOrDevice s = {});
/// The element-wise minimum over the group's processes (NaN wins; not for complex64).
array all_min(const array& x, std::optional<Group> group = std::nullopt, StreamOrDevice s = {});
/// This process's block (along axis 0, which the group size must divide) of the sum of x over the group.
array sum_scatter(const array& x, std::optional<Group> group = std::nullopt, StreamOrDevice s = {});
/// Sends x to rank dst; the result (x itself once evaluated) must be evaluated for the message to go.
array send(const array& x, int dst, std::optional<Group> group = std::nullopt, StreamOrDevice s = {});
/// An array of `shape` and `dtype` received from rank src, which sends one of the same shape and dtype.
array recv(Shape shape, Dtype dtype, int src, std::optional<Group> group = std::nullopt, StreamOrDevice s = {});
/// recv with x's shape and dtype.
array recv_like(const array& x, int src, std::optional<Group> group = std::nullopt, StreamOrDevice s = {});

namespace detail {
/// The group the last init returned (init() when none has run yet).
Group default_group();
}  // namespace detail

}  // namespace nuvec::distributed
