#include "nuvec/lm/load_model.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <filesystem>

#include "nuvec/core/error.h"
#include "nuvec/lm/models/gguf_model.h"

namespace nuvec::lm {

namespace {

/// Gives the heap the loaders freed back to the system. Building a tokenizer goes through tens of MiB of JSON (66 MiB
/// for a 128k-token GGUF vocabulary) that glibc would otherwise keep, resident beside the weights for the life of
/// the process.
void release_freed_heap() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

LoadedModel load_any(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    return load_folder(path);
  }
  if (!fs::exists(path, ec)) {
    throw_invalid("[load_model] no model at " + path + ": give a folder holding config.json or a .gguf file.");
  }
  // Any other file must be GGUF; the reader says so when its magic is wrong.
  return load_gguf_model(path);
}

}  // namespace

LoadedModel load_model(const std::string& path) {
  LoadedModel loaded = load_any(path);
  release_freed_heap();
  return loaded;
}

}  // namespace nuvec::lm
