#pragma once

#include <chrono>
#include <string>

namespace nuvec::distributed::detail {

/// How long a collective may wait for a peer: NUVEC_DISTRIBUTED_TIMEOUT seconds, 300 by default (long enough for a
/// rank that writes a checkpoint while the others wait, short enough that a lost peer ends the job).
std::chrono::milliseconds timeout();

/// "NUVEC_DISTRIBUTED_TIMEOUT, 2.5 s", for errors.
std::string timeout_text(std::chrono::milliseconds limit);

}  // namespace nuvec::distributed::detail
