#pragma once

// Prompt caches: a model's per-layer caches as a unit that can be made, trimmed, saved and loaded. Files are
// safetensors in mlx-lm's layout, so caches saved by either library load in the other: array "i.j" is slot j of
// layer i's state ("i.j.k" for caches whose state groups arrays, as the quantized cache's codes, scales and
// biases), metadata "0.i" or "0.i.j" holds layer i's meta state, "1.<key>" the caller's metadata and "2.i" layer
// i's cache type.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nuvec/lm/cache/kv_cache.h"
#include "nuvec/lm/models/language_model.h"

namespace nuvec::lm {

/// The model's own caches, or rotating caches of `max_kv_size` positions (keeping the first 4, as mlx-lm does) for
/// every layer whose cache could hold more.
Cache make_prompt_cache(const LanguageModel& model, std::optional<int> max_kv_size = std::nullopt);

/// Writes every layer's state, meta state and type, and `metadata`, to a .safetensors file.
void save_prompt_cache(const std::string& path, const Cache& cache,
                       const std::map<std::string, std::string>& metadata = {});

struct LoadedPromptCache {
  Cache cache;
  std::map<std::string, std::string> metadata;
};

/// Reads what save_prompt_cache (or mlx-lm's) wrote; the arrays are mapped and read on first use.
LoadedPromptCache load_prompt_cache(const std::string& path);

/// Whether every layer's cache can drop positions.
bool can_trim_prompt_cache(const Cache& cache);
/// Drops the last `n` positions of every layer (none unless all can); returns how many were dropped.
int trim_prompt_cache(Cache& cache, int n);

/// The number of leading tokens two sequences share: what a cache built on `cached` can keep for `tokens`.
int common_prefix_length(const std::vector<int>& cached, const std::vector<int>& tokens);

}  // namespace nuvec::lm
