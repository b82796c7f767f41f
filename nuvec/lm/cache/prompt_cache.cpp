#include "nuvec/lm/cache/prompt_cache.h"

#include <algorithm>
#include <charconv>
#include <memory>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "nuvec/io/safetensors.h"
#include "nuvec/lm/cache/quantized_cache.h"
#include "nuvec/lm/cache/rotating_cache.h"

namespace nuvec::lm {

namespace {

// mlx-lm keeps about this many first positions when it bounds a cache (attention sinks).
constexpr int sink_positions = 4;

/// Arrays per group in a cache type's state (mlx-lm nests the quantized cache's codes, scales and biases).
int state_group(const std::string& type) { return type == "QuantizedKVCache" ? 3 : 1; }

std::shared_ptr<KVCache> make_cache_of_type(const std::string& type) {
  if (type == "KVCache") {
    return std::make_shared<GrowingKVCache>();
  }
  if (type == "RotatingKVCache") {
    return std::make_shared<RotatingKVCache>(1);  // its size comes with the meta state
  }
  if (type == "QuantizedKVCache") {
    return std::make_shared<QuantizedKVCache>();
  }
  return nullptr;
}

/// The integer a whole string spells, if it does.
std::optional<int> parse_int(std::string_view text) {
  int value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) {
    return std::nullopt;
  }
  return value;
}

std::optional<int> parse_index(std::string_view text) {
  auto value = parse_int(text);
  return value && *value >= 0 ? value : std::nullopt;
}

/// A dotted key's integer parts ("3.0.1" -> {3, 0, 1}), if every part is one.
std::optional<std::vector<int>> parse_indices(std::string_view key) {
  std::vector<int> parts;
  for (;;) {
    const size_t dot = key.find('.');
    auto part = parse_index(key.substr(0, dot));
    if (!part) {
      return std::nullopt;
    }
    parts.push_back(*part);
    if (dot == std::string_view::npos) {
      return parts;
    }
    key.remove_prefix(dot + 1);
  }
}

[[noreturn]] void not_a_prompt_cache(const std::string& path, const std::string& why) {
  throw_invalid("[load_prompt_cache] '" + path + "' is not a prompt cache: " + why);
}

}  // namespace

Cache make_prompt_cache(const LanguageModel& model, std::optional<int> max_kv_size) {
  Cache cache = model.make_cache();
  if (!max_kv_size) {
    return cache;
  }
  if (*max_kv_size < 1) {
    throw_invalid("[make_prompt_cache] max_kv_size must be positive; got " + std::to_string(*max_kv_size) + ".");
  }
  for (auto& layer : cache) {
    const auto* rotating = dynamic_cast<const RotatingKVCache*>(layer.get());
    if (rotating == nullptr || rotating->max_size() > *max_kv_size) {
      layer = std::make_shared<RotatingKVCache>(*max_kv_size, std::min(sink_positions, *max_kv_size - 1));
    }
  }
  return cache;
}

void save_prompt_cache(const std::string& path, const Cache& cache,
                       const std::map<std::string, std::string>& metadata) {
  std::unordered_map<std::string, array> arrays;
  std::unordered_map<std::string, std::string> info;
  for (size_t i = 0; i < cache.size(); ++i) {
    if (!cache[i]) {
      throw_invalid("[save_prompt_cache] layer " + std::to_string(i) + " has no cache.");
    }
    const KVCache& layer = *cache[i];
    const std::string id = std::to_string(i);
    const int group = state_group(layer.type_name());
    const std::vector<array> state = layer.state();
    for (size_t j = 0; j < state.size(); ++j) {
      const auto slot = static_cast<int>(j);
      const std::string name = group == 1
                                   ? std::to_string(slot)
                                   : std::to_string(slot / group).append(".").append(std::to_string(slot % group));
      arrays.emplace(std::string(id).append(".").append(name), state[j]);
    }
    const std::vector<int> meta = layer.meta_state();
    if (meta.empty()) {
      info["0." + id] = "";  // mlx-lm's empty meta state
    }
    for (size_t j = 0; j < meta.size(); ++j) {
      info["0." + id + "." + std::to_string(j)] = std::to_string(meta[j]);
    }
    info["2." + id] = layer.type_name();
  }
  for (const auto& [key, value] : metadata) {
    info["1." + key] = value;
  }
  save_safetensors(path, std::move(arrays), std::move(info));
}

LoadedPromptCache load_prompt_cache(const std::string& path) {
  SafetensorsLoad file;
  try {
    file = load_safetensors(path);
  } catch (const error& e) {
    throw_error(e.kind(), "[load_prompt_cache] cannot read '" + path + "': " + e.what());
  }
  auto& [arrays, info] = file;

  // Types first: they give the number of layers.
  std::map<int, std::string> types;
  LoadedPromptCache loaded;
  std::map<int, std::vector<std::pair<std::vector<int>, std::string>>> meta_values;
  for (const auto& [key, value] : info) {
    if (key.starts_with("1.")) {
      loaded.metadata[key.substr(2)] = value;
      continue;
    }
    if (!key.starts_with("0.") && !key.starts_with("2.")) {
      continue;  // the writer's own metadata ("format")
    }
    const auto indices = parse_indices(std::string_view(key).substr(2));
    if (!indices || (key[0] == '2' && indices->size() != 1) || indices->size() > 2) {
      not_a_prompt_cache(path, "unexpected metadata key '" + key + "'.");
    }
    if (key[0] == '2') {
      types[indices->front()] = value;
    } else if (indices->size() == 2) {
      meta_values[indices->front()].push_back({*indices, value});
    }
  }
  if (types.empty()) {
    not_a_prompt_cache(path, "its metadata names no cache types (keys \"2.<layer>\").");
  }
  const auto layers = static_cast<int>(types.size());
  if (types.rbegin()->first != layers - 1) {
    not_a_prompt_cache(path, "its cache types are not numbered 0.." + std::to_string(layers - 1) + ".");
  }

  std::vector<std::vector<std::pair<std::vector<int>, array>>> states(static_cast<size_t>(layers));
  for (const auto& [name, a] : arrays) {
    const auto indices = parse_indices(name);
    if (!indices || indices->size() < 2 || indices->front() >= layers) {
      not_a_prompt_cache(path, "unexpected array '" + name + "' for " + std::to_string(layers) + " layers.");
    }
    states[static_cast<size_t>(indices->front())].push_back({*indices, a});
  }

  for (int i = 0; i < layers; ++i) {
    const std::string& type = types[i];
    auto layer = make_cache_of_type(type);
    if (!layer) {
      std::ostringstream msg;
      msg << "[load_prompt_cache] layer " << i << " of '" << path << "' has cache type '" << type
          << "', which nuvec does not know; it knows KVCache, RotatingKVCache and QuantizedKVCache.";
      throw_invalid(msg.str());
    }
    auto& slots = states[static_cast<size_t>(i)];
    std::sort(slots.begin(), slots.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<array> state;
    for (auto& [index, a] : slots) {
      state.push_back(a);
    }
    auto& values = meta_values[i];
    std::sort(values.begin(), values.end());
    std::vector<int> meta;
    for (const auto& [index, text] : values) {
      const auto number = parse_int(text);
      if (!number) {
        not_a_prompt_cache(path,
                           "layer " + std::to_string(i) + "'s meta state holds '" + text + "', which is not a number.");
      }
      meta.push_back(*number);
    }
    try {
      layer->set_state(state, meta);
    } catch (const error& e) {
      throw_error(e.kind(), "[load_prompt_cache] layer " + std::to_string(i) + " of '" + path + "': " + e.what());
    }
    loaded.cache.push_back(std::move(layer));
  }
  return loaded;
}

bool can_trim_prompt_cache(const Cache& cache) {
  return std::all_of(cache.begin(), cache.end(), [](const auto& layer) { return layer->is_trimmable(); });
}

int trim_prompt_cache(Cache& cache, int n) {
  if (cache.empty() || !can_trim_prompt_cache(cache)) {
    return 0;
  }
  int dropped = 0;
  for (auto& layer : cache) {
    dropped = layer->trim(n);
  }
  return dropped;
}

int common_prefix_length(const std::vector<int>& cached, const std::vector<int>& tokens) {
  const auto first_difference = std::mismatch(cached.begin(), cached.end(), tokens.begin(), tokens.end()).first;
  return static_cast<int>(first_difference - cached.begin());
}

}  // namespace nuvec::lm
