#pragma once

// The subset of the ZIP format that .npz files use: entries stored or deflated, with ZIP64 sizes and offsets
// (NumPy writes ZIP64 extra fields), read from the central directory.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "nuvec/io/blob.h"

namespace nuvec::io::detail {

struct ZipEntry {
  std::string name;
  uint16_t method = 0;  // 0 stored, 8 deflated
  uint32_t crc = 0;
  uint64_t compressed_size = 0;
  uint64_t size = 0;
  uint64_t data_offset = 0;  // of the entry's bytes in the archive (past the local header)
};

/// The entries of a ZIP archive, every offset and size checked against the archive's size.
std::vector<ZipEntry> zip_entries(const Blob& blob, std::string_view op);
/// An entry's bytes, inflated when deflated, with their CRC-32 checked.
std::vector<unsigned char> zip_read(const Blob& blob, const ZipEntry& entry, std::string_view op);
/// Whether an entry's bytes in the archive are its content (stored) and their CRC-32 matches.
bool zip_stored_intact(const Blob& blob, const ZipEntry& entry);

/// Builds a ZIP archive in memory.
class ZipWriter {
 public:
  ZipWriter(std::string_view op, std::string label) : op_(op), label_(std::move(label)) {}
  void add(const std::string& name, const std::vector<unsigned char>& content, bool compress);
  /// The finished archive (central directory appended).
  std::vector<unsigned char> finish();

 private:
  struct Written {
    std::string name;
    uint16_t method;
    uint32_t crc;
    uint64_t compressed_size;
    uint64_t size;
    uint64_t offset;
  };
  std::string_view op_;
  std::string label_;
  std::vector<unsigned char> out_;
  std::vector<Written> entries_;
};

}  // namespace nuvec::io::detail
