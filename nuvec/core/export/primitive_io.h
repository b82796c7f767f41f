#pragma once

// Each primitive's parameters in an exported-function file: one rule per primitive (primitive_io.cpp, an exhaustive
// visit), the same rule writing and reading, so a primitive added without a rule fails to compile and the two
// directions cannot drift apart.

#include <string_view>
#include <vector>

#include "nuvec/core/export.h"
#include "nuvec/core/export/bytes.h"
#include "nuvec/core/primitives.h"

namespace nuvec::detail {

/// Writes the primitive's name and parameters. Throws error(invalid_argument) for a primitive that cannot be
/// exported (a collective, which needs this process's communicator).
void write_primitive(ByteWriter& out, const Primitive& p);

/// The primitive's parameters as an ExportCallback receives them, in the order write_primitive writes them; the
/// same error as write_primitive for a primitive that cannot be exported.
std::vector<StateT> primitive_state(const Primitive& p);

/// The primitive's name, as written in a file and reported to an ExportCallback.
std::string_view primitive_name(const Primitive& p);

/// Reads a primitive written by write_primitive; throws error(io) for an unknown name or a bad parameter.
Primitive read_primitive(ByteReader& in);

}  // namespace nuvec::detail
