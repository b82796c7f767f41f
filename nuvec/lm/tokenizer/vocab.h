#pragma once

// The token <-> id tables the models share: a hash map from token to id that accepts string_view keys without
// allocating, and the reverse table indexed by id. Each token's text is held once, in an arena both tables view.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "nuvec/lm/tokenizer/json_field.h"

namespace nuvec::lm::detail {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};

template <typename T>
using StringMap = std::unordered_map<std::string, T, StringHash, std::equal_to<>>;

class Vocab {
 public:
  Vocab() = default;
  /// Reads a {"token": id, ...} object.
  static Vocab from_json(const JsonField& field);
  /// Adds `token` with `id` (a later token with the same id wins the reverse look-up, as in Hugging Face's).
  void add(std::string_view token, int32_t id);

  [[nodiscard]] std::optional<int32_t> find(std::string_view token) const {
    auto it = ids_.find(token);
    return it == ids_.end() ? std::nullopt : std::optional<int32_t>(it->second);
  }
  /// The token of `id`, or none when no token has it.
  [[nodiscard]] std::optional<std::string_view> token(int32_t id) const {
    return id >= 0 && static_cast<size_t>(id) < tokens_.size() && tokens_[id].data() != nullptr
               ? std::optional<std::string_view>(tokens_[id])
               : std::nullopt;
  }
  /// One past the largest id.
  [[nodiscard]] size_t size() const { return tokens_.size(); }

 private:
  /// Copies `text` into the arena; the view stays valid for the Vocab's life (blocks never move), and is never null.
  std::string_view store(std::string_view text);

  std::vector<std::unique_ptr<char[]>> blocks_;  // the arena; tokens fill the last block, then a new one
  size_t block_used_ = 0;
  size_t block_size_ = 0;
  std::unordered_map<std::string_view, int32_t> ids_;
  std::vector<std::string_view> tokens_;  // a null view where no token has the id
};

}  // namespace nuvec::lm::detail
