#include "nuvec/io/blob.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "nuvec/core/ops.h"
#include "nuvec/io/bytes.h"
#include "nuvec/io/errors.h"

namespace nuvec::io {

namespace {

class MappedBlob final : public Blob {
 public:
  MappedBlob(std::string label, void* data, size_t size) : Blob(std::move(label)), data_(data), size_(size) {}
  ~MappedBlob() override {
    if (data_ != nullptr) {
      ::munmap(data_, size_);
    }
  }
  MappedBlob(const MappedBlob&) = delete;
  MappedBlob& operator=(const MappedBlob&) = delete;
  [[nodiscard]] const unsigned char* data() const override { return static_cast<const unsigned char*>(data_); }
  [[nodiscard]] size_t size() const override { return size_; }
  void release(const unsigned char* begin, size_t count) const override {
    const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto start = reinterpret_cast<uintptr_t>(std::max(begin, data()));
    const auto end = reinterpret_cast<uintptr_t>(std::min(begin + count, data() + size_));
    const uintptr_t first = (start + page - 1) / page * page;
    const uintptr_t last = end / page * page;
    if (first < last) {
      ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);  // a hint: failure keeps the pages
    }
  }

 private:
  void* data_;
  size_t size_;
};

class MemoryBlob final : public Blob {
 public:
  MemoryBlob(std::string label, std::vector<unsigned char> bytes) : Blob(std::move(label)), bytes_(std::move(bytes)) {}
  [[nodiscard]] const unsigned char* data() const override { return bytes_.data(); }
  [[nodiscard]] size_t size() const override { return bytes_.size(); }

 private:
  std::vector<unsigned char> bytes_;
};

}  // namespace

void Blob::release(const unsigned char* /*begin*/, size_t /*count*/) const {}

std::shared_ptr<const Blob> map_file(const std::string& path, std::string_view op) {
  std::string label = "file " + path;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    detail::fail(op, label, std::string("cannot open the file: ") + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    detail::fail(op, label, "not a regular file");
  }
  auto size = static_cast<size_t>(st.st_size);
  void* data = nullptr;
  if (size > 0) {
    // Private and writable: evaluation may write an op's result into an input it owns alone (donation); those
    // writes land in copy-on-write pages and never reach the file.
    data = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (data == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      detail::fail(op, label, std::string("cannot map the file: ") + std::strerror(err));
    }
  }
  ::close(fd);  // the mapping keeps the file open
  return std::make_shared<MappedBlob>(std::move(label), data, size);
}

std::shared_ptr<const Blob> memory_blob(std::vector<unsigned char> bytes, std::string label) {
  return std::make_shared<MemoryBlob>(std::move(label), std::move(bytes));
}

std::shared_ptr<const Blob> read_all(Reader& reader, std::string_view op) {
  if (!reader.is_open()) {
    detail::fail(op, reader.label(), "the source is not open");
  }
  size_t start = reader.tell();
  reader.seek(0, std::ios_base::end);
  size_t end = reader.tell();
  if (end < start) {
    detail::fail(op, reader.label(), "the source ends before its current position");
  }
  std::vector<unsigned char> bytes(end - start);
  reader.read(reinterpret_cast<char*>(bytes.data()), bytes.size(), start);
  reader.seek(static_cast<int64_t>(end));
  return memory_blob(std::move(bytes), reader.label());
}

namespace detail {

array allocate(const Shape& shape, Dtype dtype) {
  size_t bytes = shape_size(shape) * size_of(dtype);
  return array(allocator::malloc(bytes), shape, dtype);
}

array adopt(const std::shared_ptr<const Blob>& blob, size_t offset, Shape shape, Dtype dtype) {
  const unsigned char* src = blob->data() + offset;
  size_t count = shape_size(shape);
  size_t align = std::min<size_t>(size_of(dtype), 8);
  bool little = std::endian::native == std::endian::little;
  if (little && dtype != bool_ && reinterpret_cast<uintptr_t>(src) % align == 0 && count > 0) {
    auto keep = blob;
    return array(const_cast<unsigned char*>(src), std::move(shape), dtype, [keep](void*) {});
  }
  array out = allocate(shape, dtype);
  auto* dst = static_cast<unsigned char*>(out.raw_data());
  if (dtype == bool_) {
    for (size_t i = 0; i < count; ++i) {
      dst[i] = src[i] != 0 ? 1 : 0;
    }
    return out;
  }
  if (count > 0) {
    std::memcpy(dst, src, count * size_of(dtype));
  }
  if (!little) {
    size_t width = dtype == complex64 ? 4 : size_of(dtype);
    byteswap_elements(dst, count * size_of(dtype) / width, width);
  }
  return out;
}

std::vector<unsigned char> contiguous_bytes(const array& a) {
  array c = contiguous(a);
  c.eval();
  std::vector<unsigned char> out(c.nbytes());
  if (!out.empty()) {
    std::memcpy(out.data(), c.raw_data(), out.size());
  }
  if (std::endian::native != std::endian::little) {
    size_t width = a.dtype() == complex64 ? 4 : size_of(a.dtype());
    byteswap_elements(out.data(), out.size() / width, width);
  }
  return out;
}

}  // namespace detail

}  // namespace nuvec::io
