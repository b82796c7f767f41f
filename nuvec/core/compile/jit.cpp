// The compiler driver. Every decision reads the environment when it is made, so
// a process can change compiler or cache location (tests do); results are kept
// per compiler command and per source hash under one mutex.

#include "nuvec/core/compile/jit.h"

#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

namespace nuvec::detail {

namespace {

// -fno-trapping-math: nuvec never unmasks floating-point traps nor reads the exception flags, and without the flag GCC
// keeps a select's untaken arithmetic under masks (GELU's tanh 7% and SiLU 6% slower a lane); values do not change.
constexpr const char* flags =
    "-std=c++20 -O3 -march=native -fopenmp-simd -fno-math-errno -fno-trapping-math -fPIC -shared";

std::mutex& jit_mutex() {
  static std::mutex m;
  return m;
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

std::string compiler_command() {
  for (const char* name : {"NUVEC_CXX", "CXX"}) {
    if (auto v = env(name); !v.empty()) {
      return v;
    }
  }
  return "c++";
}

/// The first line `command` prints and its exit status.
std::pair<std::string, int> run_command(const std::string& command) {
  FILE* pipe = popen((command + " 2>/dev/null").c_str(), "r");
  if (pipe == nullptr) {
    return {"", -1};
  }
  std::array<char, 512> buffer{};
  std::string first;
  bool have_first = false;
  while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) {
    if (!have_first) {
      first = buffer.data();
      have_first = true;
    }
  }
  int status = pclose(pipe);
  while (!first.empty() && (first.back() == '\n' || first.back() == '\r')) {
    first.pop_back();
  }
  return {first, status};
}

/// The compiler's version line, empty when it does not run (looked up once per command).
std::string compiler_version(const std::string& cxx) {
  static std::map<std::string, std::string> versions;
  auto found = versions.find(cxx);
  if (found == versions.end()) {
    auto [line, status] = run_command("'" + cxx + "' --version");
    found = versions.emplace(cxx, status == 0 ? line : std::string()).first;
  }
  return found->second;
}

void warn_once(const std::string& key, const std::string& line) {
  static std::map<std::string, bool> warned;
  if (!warned[key]) {
    warned[key] = true;
    std::cerr << line << '\n';
  }
}

/// A folder holding nuvec/core/scalar_math.h as this library has it, for the compiler's -I: named after the text's
/// hash, so libraries of other versions sharing the cache keep their own; empty when it cannot be written.
std::string scalar_math_include_dir(const std::filesystem::path& cache) {
  namespace fs = std::filesystem;
  const std::string_view text = scalar_math_text();
  const fs::path root = cache / ("include-" + hex_hash(std::string(text)));
  const fs::path header = root / "nuvec" / "core" / "scalar_math.h";
  std::error_code ec;
  if (fs::exists(header, ec)) {
    return root.string();
  }
  fs::create_directories(header.parent_path(), ec);
  std::ostringstream unique;
  unique << header.string() << '.' << getpid() << '.' << std::this_thread::get_id();
  {
    std::ofstream out(unique.str());
    out << text;
    if (!out) {
      return {};
    }
  }
  fs::rename(unique.str(), header, ec);
  return ec ? std::string() : root.string();
}

std::optional<LoadedKernel> open_library(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return std::nullopt;
  }
  LoadedKernel k{std::shared_ptr<void>(handle, [](void* h) { dlclose(h); }),
                 reinterpret_cast<ContiguousEntry>(dlsym(handle, "nuvec_fused_contiguous")),
                 reinterpret_cast<StridedEntry>(dlsym(handle, "nuvec_fused_strided"))};
  if (k.strided == nullptr) {
    return std::nullopt;
  }
  return k;
}

}  // namespace

std::string hex_hash(const std::string& text) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : text) {
    h = (h ^ c) * 1099511628211ULL;
  }
  std::ostringstream os;
  os << std::hex << h;
  return os.str();
}

std::string kernel_cache_dir() {
  if (auto v = env("NUVEC_KERNEL_CACHE"); !v.empty()) {
    return v;
  }
  if (auto v = env("XDG_CACHE_HOME"); !v.empty()) {
    return v + "/nuvec/kernels";
  }
  if (auto v = env("HOME"); !v.empty()) {
    return v + "/.cache/nuvec/kernels";
  }
  return (std::filesystem::temp_directory_path() / "nuvec-kernels").string();
}

bool compiler_available() {
  std::lock_guard lock(jit_mutex());
  const std::string cxx = compiler_command();
  if (compiler_version(cxx).empty()) {
    warn_once("missing:" + cxx, "[compile] no C++ compiler ('" + cxx +
                                    "' does not run; set NUVEC_CXX): element-wise chains run unfused.");
    return false;
  }
  return true;
}

std::optional<LoadedKernel> load_kernel(const std::string& source) {
  std::lock_guard lock(jit_mutex());
  const std::string cxx = compiler_command();
  const std::string version = compiler_version(cxx);
  if (version.empty()) {
    warn_once("missing:" + cxx, "[compile] no C++ compiler ('" + cxx +
                                    "' does not run; set NUVEC_CXX): element-wise chains run unfused.");
    return std::nullopt;
  }
  static std::map<std::string, LoadedKernel> loaded;
  const std::string key = hex_hash(source + '\n' + std::string(scalar_math_text()) + '\n' + version + '\n' + flags);
  if (auto found = loaded.find(key); found != loaded.end()) {
    return found->second;
  }
  namespace fs = std::filesystem;
  const fs::path dir = kernel_cache_dir();
  const fs::path library = dir / (key + ".so");
  std::error_code ec;
  if (!fs::exists(library, ec)) {
    fs::create_directories(dir, ec);
    // Unique names for the build, renamed into place: concurrent processes never see half a file.
    std::ostringstream unique;
    unique << key << '.' << getpid() << '.' << std::this_thread::get_id();
    const fs::path src = dir / (unique.str() + ".cpp");
    const fs::path tmp = dir / (unique.str() + ".so");
    const fs::path log = dir / (key + ".log");
    const std::string include_dir = scalar_math_include_dir(dir);
    {
      std::ofstream out(src);
      out << source;
      if (include_dir.empty() || !out) {
        warn_once("write:" + dir.string(), "[compile] cannot write kernels to " + dir.string() +
                                               " (set NUVEC_KERNEL_CACHE): element-wise chains run unfused.");
        return std::nullopt;
      }
    }
    const std::string command = "'" + cxx + "' " + flags + " -I'" + include_dir + "' -o '" + tmp.string() + "' '" + src.string() +
                                "' -lmvec -lm > '" + log.string() + "' 2>&1";
    const int status = std::system(command.c_str());
    if (status != 0 || !fs::exists(tmp, ec)) {
      warn_once("failed:" + key, "[compile] '" + cxx + "' failed to build a fused kernel (see " + log.string() +
                                     "): that chain runs unfused.");
      fs::remove(src, ec);
      return std::nullopt;
    }
    fs::rename(src, dir / (key + ".cpp"), ec);
    fs::rename(tmp, library, ec);
    fs::remove(log, ec);
  }
  auto kernel = open_library(library.string());
  if (!kernel) {
    warn_once("dlopen:" + key, "[compile] cannot load " + library.string() + ": that chain runs unfused.");
    return std::nullopt;
  }
  loaded.emplace(key, *kernel);
  return kernel;
}

}  // namespace nuvec::detail
