#pragma once

// One entry point for every checkpoint form: a Hugging Face or MLX folder, or a GGUF file.

#include <string>

#include "nuvec/lm/models/load.h"

namespace nuvec::lm {

/// Loads the model, tokenizer and generation defaults at `path`: a folder with config.json, or a GGUF file.
LoadedModel load_model(const std::string& path);

}  // namespace nuvec::lm
