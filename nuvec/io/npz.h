#pragma once

// NumPy's .npz archives: a ZIP file of .npy entries, stored (np.savez) or deflated (np.savez_compressed).

#include <memory>
#include <string>
#include <unordered_map>

#include "nuvec/core/array.h"
#include "nuvec/io/blob.h"
#include "nuvec/io/stream.h"

namespace nuvec::io {

/// Loads every array of an .npz archive, keyed by entry name without ".npy". Stored entries whose bytes are
/// aligned are adopted from the mapped file without a copy.
std::unordered_map<std::string, array> load_npz(const std::string& path);
std::unordered_map<std::string, array> load_npz(const std::shared_ptr<const Blob>& blob);
/// Saves arrays as an .npz archive, deflated when `compressed` (as np.savez_compressed), stored otherwise.
void save_npz(const std::string& path, const std::unordered_map<std::string, array>& arrays, bool compressed = false);
/// Writes the archive through a writer (a file-like object's bytes in the Python package).
void save_npz(Writer& out, const std::unordered_map<std::string, array>& arrays, bool compressed = false);

}  // namespace nuvec::io
