#include "nuvec/io/zip.h"

#include <zlib.h>

#include <algorithm>

#include "nuvec/io/bytes.h"
#include "nuvec/io/deflate.h"

namespace nuvec::io::detail {

namespace {

constexpr uint32_t kLocal = 0x04034b50;
constexpr uint32_t kCentral = 0x02014b50;
constexpr uint32_t kEnd = 0x06054b50;
constexpr uint32_t kEnd64 = 0x06064b50;
constexpr uint32_t kLocator64 = 0x07064b50;

uint32_t crc_of(const unsigned char* data, uint64_t size) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (size > 0) {
    auto chunk = static_cast<uInt>(std::min<uint64_t>(size, 1u << 30));
    crc = crc32(crc, data, chunk);
    data += chunk;
    size -= chunk;
  }
  return static_cast<uint32_t>(crc);
}

template <class T>
void put(std::vector<unsigned char>& out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i) {
    out.push_back(static_cast<unsigned char>((static_cast<uint64_t>(value) >> (8 * i)) & 0xFF));
  }
}

}  // namespace

std::vector<ZipEntry> zip_entries(const Blob& blob, std::string_view op) {
  ByteCursor in(blob.data(), blob.size(), op, blob.label());
  // The end record sits in the last 22 + 65535 bytes (its comment is at most 65535 bytes).
  if (blob.size() < 22) {
    in.fail("not a ZIP archive: too short for the end of central directory record");
  }
  size_t end = blob.size() - 22;
  size_t lowest = blob.size() > 22 + 65535 ? blob.size() - 22 - 65535 : 0;
  bool found = false;
  for (size_t pos = end + 1; pos-- > lowest;) {
    in.seek(pos, "the end record");
    if (in.read<uint32_t>("the end record signature") == kEnd) {
      end = pos;
      found = true;
      break;
    }
  }
  if (!found) {
    in.fail("not a ZIP archive: no end of central directory record");
  }
  in.seek(end + 10, "the end record");
  uint64_t count = in.read<uint16_t>("the entry count");
  uint64_t cd_size = in.read<uint32_t>("the central directory size");
  uint64_t cd_offset = in.read<uint32_t>("the central directory offset");
  if ((count == 0xFFFF || cd_size == 0xFFFFFFFF || cd_offset == 0xFFFFFFFF) && end >= 20) {
    in.seek(end - 20, "the ZIP64 locator");
    if (in.read<uint32_t>("the ZIP64 locator signature") == kLocator64) {
      in.read<uint32_t>("the ZIP64 locator");
      uint64_t end64 = in.read<uint64_t>("the ZIP64 end record offset");
      in.seek(end64, "the ZIP64 end record");
      if (in.read<uint32_t>("the ZIP64 end record signature") != kEnd64) {
        in.fail("bad ZIP64 end of central directory record");
      }
      in.seek(end64 + 32, "the ZIP64 end record");
      count = in.read<uint64_t>("the entry count");
      cd_size = in.read<uint64_t>("the central directory size");
      cd_offset = in.read<uint64_t>("the central directory offset");
    }
  }
  if (cd_offset > blob.size() || cd_size > blob.size() - cd_offset) {
    in.fail("the central directory lies past the end of the file");
  }
  // Each central header is at least 46 bytes: a count beyond that is a lie, refused before reserving memory.
  if (count > cd_size / 46) {
    in.fail("the archive claims " + std::to_string(count) + " entries in a " + std::to_string(cd_size) +
            "-byte central directory");
  }
  std::vector<ZipEntry> entries;
  entries.reserve(count);
  in.seek(cd_offset, "the central directory");
  for (uint64_t i = 0; i < count; ++i) {
    if (in.read<uint32_t>("a central directory header") != kCentral) {
      in.fail("bad central directory header signature for entry " + std::to_string(i));
    }
    ZipEntry e;
    in.take(4, "a central directory header");
    auto flags = in.read<uint16_t>("the entry flags");
    e.method = in.read<uint16_t>("the compression method");
    in.take(4, "the entry time");
    e.crc = in.read<uint32_t>("the entry CRC");
    e.compressed_size = in.read<uint32_t>("the compressed size");
    e.size = in.read<uint32_t>("the size");
    auto name_len = in.read<uint16_t>("the name length");
    auto extra_len = in.read<uint16_t>("the extra length");
    auto comment_len = in.read<uint16_t>("the comment length");
    in.take(8, "a central directory header");
    uint64_t local = in.read<uint32_t>("the local header offset");
    const unsigned char* name = in.take(name_len, "the entry name");
    e.name.assign(reinterpret_cast<const char*>(name), name_len);
    ByteCursor extra(in.take(extra_len, "the extra field"), extra_len, op, blob.label());
    while (extra.remaining() >= 4) {
      auto id = extra.read<uint16_t>("an extra field id");
      auto len = extra.read<uint16_t>("an extra field length");
      ByteCursor field(extra.take(len, "an extra field"), len, op, blob.label());
      if (id == 0x0001) {
        if (e.size == 0xFFFFFFFF) {
          e.size = field.read<uint64_t>("the ZIP64 size");
        }
        if (e.compressed_size == 0xFFFFFFFF) {
          e.compressed_size = field.read<uint64_t>("the ZIP64 compressed size");
        }
        if (local == 0xFFFFFFFF) {
          local = field.read<uint64_t>("the ZIP64 local header offset");
        }
      }
    }
    in.take(comment_len, "the entry comment");
    if ((flags & 1) != 0) {
      in.fail("entry \"" + e.name + "\" is encrypted");
    }
    if (e.method != 0 && e.method != 8) {
      in.fail("entry \"" + e.name + "\" uses compression method " + std::to_string(e.method) +
              " (only stored and deflated entries are supported)");
    }
    // The local header repeats the name and has its own extra field; the data follows it.
    ByteCursor lh(blob.data(), blob.size(), op, blob.label());
    lh.seek(local, "the local header of \"" + e.name + "\"");
    if (lh.read<uint32_t>("a local header") != kLocal) {
      in.fail("bad local header signature for entry \"" + e.name + "\"");
    }
    lh.take(22, "a local header");
    auto lname = lh.read<uint16_t>("the local name length");
    auto lextra = lh.read<uint16_t>("the local extra length");
    lh.take(size_t{lname} + lextra, "the local header's name and extra field");
    e.data_offset = lh.position();
    if (e.compressed_size > blob.size() - e.data_offset) {
      in.fail("entry \"" + e.name + "\" runs past the end of the file");
    }
    if (e.method == 0 && e.compressed_size != e.size) {
      in.fail("stored entry \"" + e.name + "\" has different compressed and uncompressed sizes");
    }
    entries.push_back(std::move(e));
  }
  return entries;
}

bool zip_stored_intact(const Blob& blob, const ZipEntry& entry) {
  return entry.method == 0 && crc_of(blob.data() + entry.data_offset, entry.size) == entry.crc;
}

std::vector<unsigned char> zip_read(const Blob& blob, const ZipEntry& entry, std::string_view op) {
  const unsigned char* src = blob.data() + entry.data_offset;
  std::vector<unsigned char> out;
  if (entry.method == 0) {
    out.assign(src, src + entry.size);
  } else {
    // The declared size bounds the allocation; a stream that expands past it is corrupt.
    size_t limit = std::min<uint64_t>(entry.size, max_inflated_size(entry.compressed_size));
    out = inflate_bytes(src, entry.compressed_size, DeflateFormat::raw, limit, op, blob.label());
    if (out.size() != entry.size) {
      fail(op, blob.label(),
           "entry \"" + entry.name + "\" inflates to " + std::to_string(out.size()) + " bytes, not the declared " +
               std::to_string(entry.size));
    }
  }
  if (crc_of(out.data(), out.size()) != entry.crc) {
    fail(op, blob.label(), "CRC-32 mismatch in entry \"" + entry.name + "\"");
  }
  return out;
}

void ZipWriter::add(const std::string& name, const std::vector<unsigned char>& content, bool compress) {
  if (content.size() >= 0xFFFFFFFFu || out_.size() >= 0xFFFFFFFFu || entries_.size() >= 0xFFFF ||
      name.size() > 0xFFFF) {
    fail(op_, label_, "archives of 4 GiB or more, or of 65535 entries or more, are not supported");
  }
  std::vector<unsigned char> packed;
  if (compress) {
    packed = deflate_bytes(content.data(), content.size(), DeflateFormat::raw, op_, label_);
  }
  const auto& data = compress ? packed : content;
  Written w{name,
            static_cast<uint16_t>(compress ? 8 : 0),
            crc_of(content.data(), content.size()),
            data.size(),
            content.size(),
            out_.size()};
  put<uint32_t>(out_, kLocal);
  put<uint16_t>(out_, 20);  // version needed: 2.0
  put<uint16_t>(out_, 0);   // flags
  put<uint16_t>(out_, w.method);
  put<uint32_t>(out_, 0x00210000);  // 1980-01-01 00:00, the earliest DOS date: archives are reproducible
  put<uint32_t>(out_, w.crc);
  put<uint32_t>(out_, w.compressed_size);
  put<uint32_t>(out_, w.size);
  put<uint16_t>(out_, name.size());
  put<uint16_t>(out_, 0);
  out_.insert(out_.end(), name.begin(), name.end());
  out_.insert(out_.end(), data.begin(), data.end());
  entries_.push_back(std::move(w));
}

std::vector<unsigned char> ZipWriter::finish() {
  if (out_.size() >= 0xFFFFFFFFu) {
    fail(op_, label_, "archives of 4 GiB or more are not supported");
  }
  size_t cd_start = out_.size();
  for (const auto& w : entries_) {
    put<uint32_t>(out_, kCentral);
    put<uint16_t>(out_, 20);
    put<uint16_t>(out_, 20);
    put<uint16_t>(out_, 0);
    put<uint16_t>(out_, w.method);
    put<uint32_t>(out_, 0x00210000);
    put<uint32_t>(out_, w.crc);
    put<uint32_t>(out_, w.compressed_size);
    put<uint32_t>(out_, w.size);
    put<uint16_t>(out_, w.name.size());
    put<uint16_t>(out_, 0);  // extra
    put<uint16_t>(out_, 0);  // comment
    put<uint16_t>(out_, 0);  // disk
    put<uint16_t>(out_, 0);  // internal attributes
    put<uint32_t>(out_, 0);  // external attributes
    put<uint32_t>(out_, w.offset);
    out_.insert(out_.end(), w.name.begin(), w.name.end());
  }
  size_t cd_size = out_.size() - cd_start;
  put<uint32_t>(out_, kEnd);
  put<uint16_t>(out_, 0);
  put<uint16_t>(out_, 0);
  put<uint16_t>(out_, entries_.size());
  put<uint16_t>(out_, entries_.size());
  put<uint32_t>(out_, cd_size);
  put<uint32_t>(out_, cd_start);
  put<uint16_t>(out_, 0);
  return std::move(out_);
}

}  // namespace nuvec::io::detail
