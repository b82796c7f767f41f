#include "nuvec/lm/load_model.h"

#include <filesystem>

#include "nuvec/core/error.h"
#include "nuvec/lm/models/gguf_model.h"

namespace nuvec::lm {

LoadedModel load_model(const std::string& path) {
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

}  // namespace nuvec::lm
