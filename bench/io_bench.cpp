// io_bench: loading a 1 GiB safetensors file (256 float32 tensors of 4 MiB) by memory mapping, then touching every
// tensor, against reading the whole file with plain read(2) and against the Reader path (pread into fresh arrays).
// Each row runs cold (the file's pages evicted from the page cache with posix_fadvise first) and warm.
// Usage: io_bench [dir (default /tmp)] [reps (default 3)]; prints the median milliseconds of each row.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nuvec/nuvec.h"

namespace nv = nuvec;

namespace {

constexpr int kTensors = 256;
constexpr int kElems = 1 << 20;  // 4 MiB of float32 each: 1 GiB in all

void evict(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

double time_ms(const std::function<void()>& fn) {
  auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Reads one float per 4 KiB page, so every page of the tensor is faulted in.
float touch_pages(const nv::array& a) {
  const auto* p = a.data<float>();
  float acc = 0;
  for (size_t i = 0; i < a.size(); i += 1024) {
    acc += p[i];
  }
  return acc;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = argc > 1 ? argv[1] : "/tmp";
  int reps = argc > 2 ? std::stoi(argv[2]) : 3;
  std::string path = dir + "/nuvec_io_bench.safetensors";
  {
    std::unordered_map<std::string, nv::array> arrays;
    for (int i = 0; i < kTensors; ++i) {
      arrays.insert_or_assign("layer." + std::to_string(i) + ".weight", nv::full({1024, 1024}, float(i)));
    }
    nv::save_safetensors(path, arrays);
  }
  size_t file_size = std::filesystem::file_size(path);
  std::printf("file: %s, %.3f GiB, %d tensors\n", path.c_str(), file_size / double(1 << 30), kTensors);

  float sink = 0;
  struct Row {
    const char* name;
    std::function<void()> fn;
    bool reads_all = true;  // whether the row reads the whole file (and a bandwidth means something)
  };
  auto read_into = [&](char* buf) {
    int fd = ::open(path.c_str(), O_RDONLY);
    size_t done = 0;
    while (done < file_size) {
      ssize_t n = ::read(fd, buf + done, file_size - done);
      if (n <= 0) {
        break;
      }
      done += static_cast<size_t>(n);
    }
    ::close(fd);
    sink += buf[file_size - 1];
  };
  std::vector<char> reused(file_size, 1);  // faulted in once, outside the timings
  std::vector<Row> rows = {
      {"mmap: load_safetensors (header, no data read)", [&] { sink += nv::load_safetensors(path).first.size(); },
       false},
      {"mmap: load + first touch of every page of every tensor",
       [&] {
         for (const auto& [name, a] : nv::load_safetensors(path).first) {
           sink += touch_pages(a);
         }
       }},
      {"mmap: load + nuvec sum of every tensor",
       [&] {
         for (const auto& [name, a] : nv::load_safetensors(path).first) {
           sink += nv::sum(a).item<float>();
         }
       }},
      {"read(2): whole file into a fresh buffer",
       [&] {
         std::unique_ptr<char[]> buf(new char[file_size]);  // not zero-filled: read(2) writes every byte
         read_into(buf.get());
       }},
      {"read(2): whole file into a reused, already faulted buffer", [&] { read_into(reused.data()); }},
      {"Reader: load_safetensors(FileReader) (pread into arrays)",
       [&] {
         for (const auto& [name, a] : nv::load_safetensors(std::make_shared<nv::io::FileReader>(path)).first) {
           sink += touch_pages(a);
         }
       }},
  };
  std::printf("%-60s %10s %10s %12s\n", "row", "cold ms", "warm ms", "cold GB/s");
  for (const auto& row : rows) {
    std::vector<double> cold;
    std::vector<double> warm;
    for (int r = 0; r < reps; ++r) {
      evict(path);
      cold.push_back(time_ms(row.fn));
      warm.push_back(time_ms(row.fn));
      nv::clear_cache();
    }
    std::sort(cold.begin(), cold.end());
    std::sort(warm.begin(), warm.end());
    double c = cold[cold.size() / 2];
    std::printf("%-60s %10.1f %10.1f ", row.name, c, warm[warm.size() / 2]);
    if (row.reads_all) {
      std::printf("%12.2f\n", file_size / c / 1e6);
    } else {
      std::printf("%12s\n", "-");
    }
  }
  std::filesystem::remove(path);
  return sink == 12345.0f ? 1 : 0;  // keeps the reads observable
}
