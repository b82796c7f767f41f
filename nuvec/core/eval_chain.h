#pragma once

// Element-wise chains in one pass: eval defers a unary or binary node that only one such node of its shape reads,
// and runs the chain when it reaches the last node, tile by tile through the nodes' own kernels, so the intermediates
// never go to memory and every element is computed as the nodes would have computed it one by one.

#include "nuvec/core/array.h"

namespace nuvec::detail {

/// Nodes in one chain at most (deeper graphs run as several chains).
inline constexpr int max_chain_nodes = 16;

/// Whether `producer`, read by `consumer` alone, may run inside consumer's chain: both element-wise on the CPU, not
/// tracers, of one shape, and large enough that the intermediate would leave the caches.
bool joins_chain(const array& producer, const array& consumer);

/// Runs `root` together with the inputs still to be evaluated behind it (those eval deferred into its chain) in one
/// pass and detaches them all. Returns false, having run nothing, where root has no such inputs, an input failed, or
/// the backend cannot run the chain in one pass (the caller then runs the nodes one by one).
bool run_chain(array& root);

}  // namespace nuvec::detail
