// The GPU side of the backend seam in a build without the CUDA backend: there is no GPU, so the core never routes
// work or data here; a node on a GPU stream (which only a hand-made Stream can name) fails as any kernel error does.

#include "nuvec/core/backend.h"
#include "nuvec/core/error.h"

namespace nuvec::detail {

namespace {

[[noreturn]] void no_backend(const std::string& what) {
  throw_error(ErrorKind::unsupported, "[" + what + "] no GPU backend in this build (configured without CUDA).");
}

}  // namespace

int gpu_count() { return 0; }

const std::unordered_map<std::string, std::variant<std::string, size_t>>& gpu_info(int) { no_backend("device_info"); }

void gpu_synchronize(const Stream&) { no_backend("synchronize"); }

void gpu_wait(const array::Data&) { no_backend("eval"); }

void* gpu_host_copy(const array::Data&) { no_backend("data"); }

size_t gpu_memory(int, GpuMemory) { no_backend("memory"); }
size_t gpu_set_limit(int, bool, size_t) { no_backend("memory"); }
void gpu_reset_peak_memory(int) { no_backend("memory"); }
void gpu_clear_cache(int) { no_backend("memory"); }

void eval_gpu(const Primitive& primitive, const std::vector<array>&, std::vector<array>&, const Stream& stream) {
  throw_error(ErrorKind::unsupported, "[eval] " + std::string(name(primitive)) + " is on GPU stream " +
                                          std::to_string(stream.index) +
                                          ": no usable GPU (no GPU backend in this build: configured without CUDA).");
}

}  // namespace nuvec::detail
