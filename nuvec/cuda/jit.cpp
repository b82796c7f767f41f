#include "nuvec/cuda/jit.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <vector>

#include "nuvec/core/compile/jit.h"
#include "nuvec/core/error.h"
#include "nuvec/cuda/check.h"
#include "nuvec/cuda/device.h"
#include "nuvec/cuda/kernel_sources.h"
#include "nuvec/cuda/libraries.h"

namespace nuvec::cuda {

namespace {

void check_nvrtc(nvrtcResult status, const char* what) {
  if (status != NVRTC_SUCCESS) {
    throw_internal(std::string("[cuda] ") + what + ": " + nvrtc().get_error_string(status) + ".");
  }
}

/// The headers generated sources may include, by the names they include them with.
struct Headers {
  std::vector<std::string> texts;
  std::vector<std::string> names;
  Headers() {
    for (const char* file : {"prelude.cuh", "cstdint", "type_traits", "bit"}) {
      texts.emplace_back(kernel_source(file));
      names.emplace_back(std::string(file) == "prelude.cuh" ? "nuvec/cuda/prelude.cuh" : file);
    }
    texts.emplace_back(detail::scalar_math_text());
    names.emplace_back("nuvec/core/scalar_math.h");
  }
};

const Headers& headers() {
  static const Headers h;
  return h;
}

std::string nvrtc_version() {
  int major = 0;
  int minor = 0;
  check_nvrtc(nvrtc().version(&major, &minor), "nvrtcVersion");
  return std::to_string(major) + "." + std::to_string(minor);
}

/// The key of a source's cubin: the source, the headers it may include, the compiler and the architecture.
std::string cache_key(const std::string& source, int arch) {
  std::string all = source;
  for (const auto& text : headers().texts) {
    all += '\n';
    all += text;
  }
  return detail::hex_hash(all + '\n' + nvrtc_version() + '\n' + std::to_string(arch));
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return in ? std::string(std::istreambuf_iterator<char>(in), {}) : std::string();
}

/// The cubin of `source` from the disk cache, compiled and stored there on a miss (renamed into place, so
/// concurrent processes never read half a file; a cache that cannot be written only costs the compile).
std::string cached_cubin(const std::string& source, int arch, const std::string& key) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(detail::kernel_cache_dir()) / "cuda";
  const fs::path file = dir / (key + ".cubin");
  if (auto cubin = read_file(file); !cubin.empty()) {
    return cubin;
  }
  auto cubin = compile_cubin(source, arch);
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::ostringstream unique;
  unique << key << '.' << getpid() << '.' << std::this_thread::get_id();
  const fs::path tmp = dir / unique.str();
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
  }
  fs::rename(tmp, file, ec);
  if (ec) {
    fs::remove(tmp, ec);
  }
  return cubin;
}

struct Loaded {
  std::mutex mutex;
  std::map<std::string, cudaLibrary_t> libraries;  // by cache key
  // By source, entry name and architecture: a launch finds its kernel without hashing the headers again.
  std::unordered_map<std::string, cudaKernel_t> kernels;
};

Loaded& loaded() {
  static Loaded l;
  return l;
}

}  // namespace

std::string compile_cubin(const std::string& source, int arch) {
  const auto& h = headers();
  std::vector<const char*> texts;
  std::vector<const char*> names;
  for (size_t i = 0; i < h.texts.size(); ++i) {
    texts.push_back(h.texts[i].c_str());
    names.push_back(h.names[i].c_str());
  }
  nvrtcProgram program = nullptr;
  check_nvrtc(nvrtc().create_program(&program, source.c_str(), "nuvec_kernel.cu", static_cast<int>(texts.size()),
                                 texts.data(), names.data()),
              "nvrtcCreateProgram");
  const std::string arch_option = "--gpu-architecture=sm_" + std::to_string(arch);
  const char* options[] = {arch_option.c_str(), "-std=c++20", "-default-device", "-DNDEBUG"};
  const auto status = nvrtc().compile_program(program, static_cast<int>(std::size(options)), options);
  if (status != NVRTC_SUCCESS) {
    size_t log_size = 0;
    nvrtc().get_program_log_size(program, &log_size);
    std::string log(log_size, '\0');
    nvrtc().get_program_log(program, log.data());
    nvrtc().destroy_program(&program);
    throw_internal("[cuda] NVRTC could not compile a generated kernel:\n" + log + "\nsource:\n" + source);
  }
  size_t size = 0;
  check_nvrtc(nvrtc().get_cubin_size(program, &size), "nvrtcGetCUBINSize");
  std::string cubin(size, '\0');
  check_nvrtc(nvrtc().get_cubin(program, cubin.data()), "nvrtcGetCUBIN");
  nvrtc().destroy_program(&program);
  return cubin;
}

cudaKernel_t kernel(const std::string& source, const char* name, int device) {
  const auto& props = properties(device);
  const int arch = props.major * 10 + props.minor;
  std::string lookup = source;
  lookup += '\0';
  lookup += name;
  lookup += '\0';
  lookup += std::to_string(arch);
  auto& l = loaded();
  std::lock_guard lock(l.mutex);
  if (auto found = l.kernels.find(lookup); found != l.kernels.end()) {
    return found->second;
  }
  const std::string key = cache_key(source, arch);
  auto& library = l.libraries[key];
  if (library == nullptr) {
    const auto cubin = cached_cubin(source, arch, key);
    use_device(device);
    check(cudaLibraryLoadData(&library, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
          "cudaLibraryLoadData");
  }
  cudaKernel_t k = nullptr;
  check(cudaLibraryGetKernel(&k, library, name), "cudaLibraryGetKernel");
  l.kernels.emplace(std::move(lookup), k);
  return k;
}

void launch(cudaKernel_t k, dim3 grid, dim3 block, void** args, size_t shared_bytes, cudaStream_t stream) {
  check(cudaLaunchKernel(reinterpret_cast<const void*>(k), grid, block, args, shared_bytes, stream),
        "cudaLaunchKernel");
}

unsigned grid_size(int64_t n, unsigned block, int device) {
  const auto most = static_cast<int64_t>(properties(device).multiProcessorCount) * 16;
  const int64_t needed = (n + block - 1) / block;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min(needed, most)));
}

}  // namespace nuvec::cuda
