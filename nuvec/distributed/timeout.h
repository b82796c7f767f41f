#pragma once

#include <chrono>

namespace nuvec::distributed::detail {

/// How long a collective may wait for a peer: NUVEC_DISTRIBUTED_TIMEOUT seconds, 300 by default (long enough for a
/// rank that writes a checkpoint while the others wait, short enough that a lost peer ends the job).
std::chrono::milliseconds timeout();

}  // namespace nuvec::distributed::detail
