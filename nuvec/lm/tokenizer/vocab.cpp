#include "nuvec/lm/tokenizer/vocab.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace nuvec::lm::detail {

namespace {

// Large enough that a vocabulary of 128k tokens takes a few blocks, small enough not to matter for a tiny one.
constexpr size_t arena_block = size_t{64} << 10;

}  // namespace

Vocab Vocab::from_json(const JsonField& field) {
  if (!field.value().is_object()) {
    field.fail(std::string("expected an object of token: id, got ") + field.value().type_name());
  }
  Vocab vocab;
  vocab.ids_.reserve(field.value().size());
  for (const auto& item : field.value().items()) {
    const std::string& token = item.key();
    auto value = field[token].integer();
    if (value < 0 || value > std::numeric_limits<int32_t>::max()) {
      field[token].fail("id out of range");
    }
    vocab.add(token, static_cast<int32_t>(value));
  }
  return vocab;
}

std::string_view Vocab::store(std::string_view text) {
  // Every view points into a block, the empty one included, so that a null view can mean "no token".
  if (blocks_.empty() || block_used_ + text.size() > block_size_) {
    block_size_ = std::max(arena_block, text.size());
    blocks_.push_back(std::make_unique_for_overwrite<char[]>(block_size_));
    block_used_ = 0;
  }
  char* at = blocks_.back().get() + block_used_;
  if (!text.empty()) {
    std::memcpy(at, text.data(), text.size());
  }
  block_used_ += text.size();
  return {at, text.size()};
}

void Vocab::add(std::string_view token, int32_t id) {
  if (static_cast<size_t>(id) >= tokens_.size()) {
    tokens_.resize(static_cast<size_t>(id) + 1);
  }
  const auto it = ids_.find(token);
  const std::string_view held = it != ids_.end() ? it->first : store(token);
  tokens_[id] = held;
  ids_.insert_or_assign(held, id);
}

}  // namespace nuvec::lm::detail
