#pragma once

// One entry point for every checkpoint form: a Hugging Face or MLX folder, or a GGUF file.

#include <optional>
#include <string>

#include "nuvec/lm/models/load.h"

namespace nuvec::lm {

/// Loads the model, tokenizer and generation defaults at `path`: a folder with config.json, or a GGUF file. With a
/// placement the model comes split across its group (tensor parallel or a pipeline), and this rank reads and
/// converts only the parts of the checkpoint it keeps.
LoadedModel load_model(const std::string& path, const std::optional<Placement>& placement = std::nullopt);

}  // namespace nuvec::lm
