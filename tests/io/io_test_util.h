#pragma once

// Helpers for the io tests: a scratch directory, raw file bytes, and Python (with NumPy) as an independent writer.

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "nuvec/nuvec.h"

namespace nuvec::test {

/// A fresh directory under the system temp dir, removed with the object.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] std::string path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  std::filesystem::path dir_;
};

void write_file(const std::string& path, const std::vector<unsigned char>& bytes);
std::vector<unsigned char> read_file(const std::string& path);

/// Runs a Python 3 script (NumPy importable as np); fails the test with its output when it exits non-zero.
/// Returns the script's stdout.
std::string run_python(const std::string& script);

/// Appends `value` little-endian (or big-endian) to `out`.
template <class T>
void put(std::vector<unsigned char>& out, T value, bool big_endian = false) {
  unsigned char bytes[sizeof(T)];
  __builtin_memcpy(bytes, &value, sizeof(T));
  for (size_t i = 0; i < sizeof(T); ++i) {
    out.push_back(bytes[big_endian ? sizeof(T) - 1 - i : i]);
  }
}

inline TempDir::TempDir() {
  std::random_device rd;
  dir_ =
      std::filesystem::temp_directory_path() / ("nuvec_io_" + std::to_string(::getpid()) + "_" + std::to_string(rd()));
  std::filesystem::create_directories(dir_);
}

inline TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

inline void write_file(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

inline std::vector<unsigned char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline std::string run_python(const std::string& script) {
  TempDir dir;
  std::string file = dir.path("script.py");
  {
    std::ofstream out(file);
    out << "import numpy as np\n" << script;
  }
  std::string command = "/usr/bin/python3 " + file + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  std::string output;
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    output.append(buffer.data(), n);
  }
  int status = ::pclose(pipe);
  EXPECT_EQ(status, 0) << "python failed:\n" << output;
  return output;
}

/// The elements of `a` in C order as raw little-endian bytes (the host is little-endian).
inline std::vector<unsigned char> raw_bytes(const array& a) {
  array c = contiguous(a);
  c.eval();
  const auto* p = static_cast<const unsigned char*>(c.raw_data());
  return {p, p + c.nbytes()};
}

}  // namespace nuvec::test
