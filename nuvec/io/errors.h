#pragma once

// Errors of the io library: every message names the operation, the file and the problem.

#include <string>
#include <string_view>

#include "nuvec/core/error.h"

namespace nuvec::io::detail {

/// Throws an io error "[op] <label>: problem".
[[noreturn]] inline void fail(std::string_view op, std::string_view label, std::string_view problem) {
  throw_error(ErrorKind::io, std::string("[").append(op).append("] ").append(label).append(": ").append(problem));
}

}  // namespace nuvec::io::detail
