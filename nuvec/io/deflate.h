#pragma once

// zlib for the compressed formats: gzip files (IDX) and raw deflate streams (zip entries of .npz files).

#include <cstddef>
#include <string_view>
#include <vector>

namespace nuvec::io::detail {

enum class DeflateFormat { gzip, raw };

/// Inflates a whole stream; fails (naming op and label) when it is corrupt, truncated, or would give more than
/// `limit` bytes, so a hostile file cannot make it allocate without bound.
std::vector<unsigned char> inflate_bytes(const unsigned char* src, size_t size, DeflateFormat format, size_t limit,
                                         std::string_view op, std::string_view label);
/// Compresses at zlib's default level.
std::vector<unsigned char> deflate_bytes(const unsigned char* src, size_t size, DeflateFormat format,
                                         std::string_view op, std::string_view label);

/// The most a deflate stream can expand (about 1032:1), plus slack for headers: a bound on a gzip file's content.
inline size_t max_inflated_size(size_t compressed) {
  return compressed > (size_t{1} << 52) ? compressed : compressed * 1032 + 4096;
}

}  // namespace nuvec::io::detail
