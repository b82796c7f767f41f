#pragma once

// NumPy's .npy format (versions 1.0, 2.0 and 3.0): a magic string, a Python-literal header giving dtype, order and
// shape, then the elements. Loading maps the file; C-ordered little-endian data is adopted without a copy, Fortran
// order gives a transposed view, big-endian data is copied and swapped. bfloat16, which NumPy lacks, is written as
// the 2-byte void type '<V2' (what ml_dtypes' bfloat16 also reports) and read back as bfloat16.

#include <memory>
#include <string>

#include "nuvec/core/array.h"
#include "nuvec/io/blob.h"
#include "nuvec/io/stream.h"

namespace nuvec {

/// Loads a .npy file.
array load(std::string file, StreamOrDevice s = {});
/// Loads .npy bytes from a reader (from its current position to its end).
array load(std::shared_ptr<io::Reader> in_stream, StreamOrDevice s = {});
/// Saves `a` as .npy (C order, little-endian), appending ".npy" to the name when missing, as MLX does.
void save(std::string file, array a);
void save(std::shared_ptr<io::Writer> out_stream, array a);

namespace io {

struct NpyOptions {
  bool fortran_order = false;  // write the elements in column-major order
  bool big_endian = false;     // write multi-byte elements big-endian
};

/// Parses .npy bytes held by a blob.
array load_npy(const std::shared_ptr<const Blob>& blob);
/// Parses .npy bytes at [offset, offset + size) of a blob (an entry stored uncompressed in an .npz archive).
array load_npy(const std::shared_ptr<const Blob>& blob, size_t offset, size_t size, std::string_view op);
/// The .npy encoding of `a`.
std::vector<unsigned char> npy_bytes(const array& a, NpyOptions options = {});
/// Saves `a` as .npy at exactly `path`, in the order and byte order asked for.
void save_npy(const std::string& path, const array& a, NpyOptions options = {});

}  // namespace io

}  // namespace nuvec
