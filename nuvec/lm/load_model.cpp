#include "nuvec/lm/load_model.h"

#include <filesystem>

#include "nuvec/core/allocator.h"
#include "nuvec/core/error.h"
#include "nuvec/lm/models/gguf_model.h"

namespace nuvec::lm {

namespace {

LoadedModel load_any(const std::string& path, const std::optional<Placement>& placement) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    return load_folder(path, placement);
  }
  if (!fs::exists(path, ec)) {
    throw_invalid("[load_model] no model at " + path + ": give a folder holding config.json or a .gguf file.");
  }
  // Any other file must be GGUF; the reader says so when its magic is wrong.
  return load_gguf_model(path, placement);
}

}  // namespace

LoadedModel load_model(const std::string& path, const std::optional<Placement>& placement) {
  LoadedModel loaded = load_any(path, placement);
  // Building a tokenizer goes through tens of MiB of JSON (66 MiB for a 128k-token GGUF vocabulary) that the C
  // library would otherwise keep, resident beside the weights for the life of the process.
  clear_cache();
  return loaded;
}

}  // namespace nuvec::lm
