#pragma once

// The IDX format of MNIST and Fashion-MNIST: a big-endian header (two zero bytes, a type code, the number of axes,
// then one uint32 per axis) followed by the elements in C order, big-endian. Files may be gzip-compressed.

#include <string>

#include "nuvec/core/array.h"
#include "nuvec/io/blob.h"

namespace nuvec::io {

/// Loads an IDX file (plain or gzip, told apart by its first bytes) as an evaluated array of the file's dtype
/// (uint8, int8, int16, int32, float32, float64) and shape: MNIST's images give uint8 (N, 28, 28), labels uint8 (N).
array load_idx(const std::string& path);
/// Parses IDX bytes (plain or gzip); `blob` names the source in errors.
array load_idx(const std::shared_ptr<const Blob>& blob);
/// Writes `a` (uint8, int8, int16, int32, float32 or float64; at most 255 axes) as IDX, gzip-compressed when asked.
void save_idx(const std::string& path, const array& a, bool gzip = false);

}  // namespace nuvec::io
