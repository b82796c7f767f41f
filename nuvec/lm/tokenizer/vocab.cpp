#include "nuvec/lm/tokenizer/vocab.h"

#include <limits>

namespace nuvec::lm::detail {

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

void Vocab::add(std::string token, int32_t id) {
  if (static_cast<size_t>(id) >= tokens_.size()) {
    tokens_.resize(static_cast<size_t>(id) + 1);
    present_.resize(static_cast<size_t>(id) + 1);
  }
  tokens_[id] = token;
  present_[id] = true;
  ids_.insert_or_assign(std::move(token), id);
}

}  // namespace nuvec::lm::detail
