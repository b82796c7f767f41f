#pragma once

// MLX's streaming reader and writer interface (`nuvec::io::Reader`, `nuvec::io::Writer`) and their file
// implementations. Loaders that take a Reader read through it; savers that take a Writer write through it.

#include <cstddef>
#include <cstdint>
#include <ios>
#include <string>

namespace nuvec::io {

class Reader {
 public:
  [[nodiscard]] virtual bool is_open() const = 0;
  [[nodiscard]] virtual bool good() const = 0;
  virtual size_t tell() = 0;
  virtual void seek(int64_t off, std::ios_base::seekdir way = std::ios_base::beg) = 0;
  /// Reads exactly `n` bytes at the current position; throws when fewer are left.
  virtual void read(char* data, size_t n) = 0;
  /// Reads exactly `n` bytes at `offset` without moving the current position.
  virtual void read(char* data, size_t n, size_t offset) = 0;
  /// Names the source in error messages ("file model.safetensors").
  [[nodiscard]] virtual std::string label() const = 0;
  virtual ~Reader() = default;
};

class Writer {
 public:
  [[nodiscard]] virtual bool is_open() const = 0;
  [[nodiscard]] virtual bool good() const = 0;
  virtual size_t tell() = 0;
  virtual void seek(int64_t off, std::ios_base::seekdir way = std::ios_base::beg) = 0;
  /// Writes all `n` bytes; throws on failure.
  virtual void write(const char* data, size_t n) = 0;
  [[nodiscard]] virtual std::string label() const = 0;
  virtual ~Writer() = default;
};

/// Reads a file through a descriptor (pread for positioned reads).
class FileReader : public Reader {
 public:
  explicit FileReader(std::string path);
  ~FileReader() override;
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  [[nodiscard]] bool is_open() const override { return fd_ >= 0; }
  [[nodiscard]] bool good() const override { return fd_ >= 0 && good_; }
  size_t tell() override { return pos_; }
  void seek(int64_t off, std::ios_base::seekdir way = std::ios_base::beg) override;
  void read(char* data, size_t n) override;
  void read(char* data, size_t n, size_t offset) override;
  [[nodiscard]] std::string label() const override { return "file " + path_; }
  /// The file's size in bytes.
  [[nodiscard]] size_t size() const { return size_; }
  /// Why opening failed (empty when open).
  [[nodiscard]] const std::string& open_error() const { return open_error_; }

 private:
  std::string path_;
  std::string open_error_;
  int fd_ = -1;
  size_t size_ = 0;
  size_t pos_ = 0;
  bool good_ = true;
};

/// MLX's name for its file reader, which reads large requests in parallel; nuvec's positioned reads serve both.
using ParallelFileReader = FileReader;

/// Writes a file (created or truncated) through a descriptor.
class FileWriter : public Writer {
 public:
  explicit FileWriter(std::string path);
  ~FileWriter() override;
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;

  [[nodiscard]] bool is_open() const override { return fd_ >= 0; }
  [[nodiscard]] bool good() const override { return fd_ >= 0 && good_; }
  size_t tell() override { return pos_; }
  void seek(int64_t off, std::ios_base::seekdir way = std::ios_base::beg) override;
  void write(const char* data, size_t n) override;
  [[nodiscard]] std::string label() const override { return "file " + path_; }
  /// Why opening failed (empty when open).
  [[nodiscard]] const std::string& open_error() const { return open_error_; }

 private:
  std::string path_;
  std::string open_error_;
  int fd_ = -1;
  size_t pos_ = 0;
  size_t end_ = 0;
  bool good_ = true;
};

}  // namespace nuvec::io
