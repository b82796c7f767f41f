#include "nuvec/lm/load_model.h"

#include <array>
#include <filesystem>
#include <fstream>

#include "nuvec/core/error.h"
#include "nuvec/lm/models/gguf_model.h"

namespace nuvec::lm {

namespace {

bool starts_with_gguf_magic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::array<char, 4> magic{};
  return in.read(magic.data(), magic.size()) && std::string_view(magic.data(), magic.size()) == "GGUF";
}

}  // namespace

LoadedModel load_model(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    return load_folder(path);
  }
  if (!fs::exists(path, ec)) {
    throw_invalid("[load_model] no model at " + path + ": give a folder holding config.json or a .gguf file.");
  }
  if (starts_with_gguf_magic(path)) {
    return load_gguf_model(path);
  }
  throw_invalid("[load_model] " + path +
                " is neither a model folder nor a GGUF file (it does not start with the GGUF magic).");
}

}  // namespace nuvec::lm
