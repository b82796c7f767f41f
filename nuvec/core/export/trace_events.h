#pragma once

// A traced function handed to an ExportCallback (export.h) instead of a file: the events MLX's callback export
// sends, in its order, built from the same flattened graph the file writer writes.

#include "nuvec/core/export.h"
#include "nuvec/core/export/trace_io.h"

namespace nuvec::detail {

/// Calls `callback` with the trace's events; constants not yet in `constants` are reported and added to it. All
/// events are built before the first call, so a primitive that cannot be exported throws before any event.
void report_trace(const ExportCallback& callback, const ExportedTrace& trace, ConstantTable& constants);

}  // namespace nuvec::detail
