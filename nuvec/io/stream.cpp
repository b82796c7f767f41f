#include "nuvec/io/stream.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "nuvec/io/errors.h"

namespace nuvec::io {

namespace {

size_t resolve(int64_t off, std::ios_base::seekdir way, size_t pos, size_t end, const std::string& label) {
  int64_t base = way == std::ios_base::beg   ? 0
                 : way == std::ios_base::cur ? static_cast<int64_t>(pos)
                                             : static_cast<int64_t>(end);
  int64_t target = base + off;
  if (target < 0) {
    detail::fail("seek", label, "seek to a negative offset " + std::to_string(target));
  }
  return static_cast<size_t>(target);
}

}  // namespace

FileReader::FileReader(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    open_error_ = std::strerror(errno);
  }
  struct stat st {};
  if (fd_ >= 0 && ::fstat(fd_, &st) == 0) {
    size_ = static_cast<size_t>(st.st_size);
  }
}

FileReader::~FileReader() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

void FileReader::seek(int64_t off, std::ios_base::seekdir way) { pos_ = resolve(off, way, pos_, size_, label()); }

void FileReader::read(char* data, size_t n) {
  read(data, n, pos_);
  pos_ += n;
}

void FileReader::read(char* data, size_t n, size_t offset) {
  if (fd_ < 0) {
    detail::fail("read", label(), "cannot open the file: " + open_error_);
  }
  size_t done = 0;
  while (done < n) {
    ssize_t got =
        ::pread(fd_, data + done, std::min<size_t>(n - done, size_t{1} << 30), static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0) {
      good_ = false;
      detail::fail("read", label(),
                   got < 0 ? std::string("read failed: ") + std::strerror(errno)
                           : "unexpected end of file: wanted " + std::to_string(n) + " bytes at offset " +
                                 std::to_string(offset) + ", the file has " + std::to_string(size_) + " bytes");
    }
    done += static_cast<size_t>(got);
  }
}

FileWriter::FileWriter(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    open_error_ = std::strerror(errno);
  }
}

FileWriter::~FileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

void FileWriter::seek(int64_t off, std::ios_base::seekdir way) { pos_ = resolve(off, way, pos_, end_, label()); }

void FileWriter::write(const char* data, size_t n) {
  if (fd_ < 0) {
    detail::fail("write", label(), "cannot open the file for writing: " + open_error_);
  }
  size_t done = 0;
  while (done < n) {
    ssize_t put =
        ::pwrite(fd_, data + done, std::min<size_t>(n - done, size_t{1} << 30), static_cast<off_t>(pos_ + done));
    if (put < 0 && errno == EINTR) {
      continue;
    }
    if (put <= 0) {
      good_ = false;
      detail::fail("write", label(), std::string("write failed: ") + std::strerror(errno));
    }
    done += static_cast<size_t>(put);
  }
  pos_ += n;
  end_ = std::max(end_, pos_);
}

}  // namespace nuvec::io
