#include "nuvec/lm/constrain/json_constraint.h"

#include <algorithm>
#include <string>
#include <utility>

#include "nuvec/core/error.h"

namespace nuvec::lm {

JsonConstraint::JsonConstraint(std::shared_ptr<const JsonSchema> schema, std::shared_ptr<const TokenTexts> texts)
    : schema_(std::move(schema)), texts_(std::move(texts)), matcher_(*schema_) {}

void JsonConstraint::allowed(std::vector<uint8_t>& mask) {
  const bool free_string = matcher_.in_free_string();
  const size_t size = std::min(mask.size(), static_cast<size_t>(texts_->size()));
  for (int byte = 0; byte < 256; ++byte) {
    const std::vector<int32_t>& ids = texts_->starting_with(static_cast<uint8_t>(byte));
    if (ids.empty() || !matcher_.accepts(std::string(1, static_cast<char>(byte)))) {
      continue;
    }
    for (int32_t id : ids) {
      if (static_cast<size_t>(id) < size) {
        const bool allowed = (free_string && texts_->plain(id)) || matcher_.accepts(texts_->bytes(id));
        mask[static_cast<size_t>(id)] = allowed ? 1 : 0;
      }
    }
  }
}

void JsonConstraint::accept(int32_t id) {
  if (id < 0 || id >= texts_->size() || texts_->bytes(id).empty() || !matcher_.feed(texts_->bytes(id))) {
    throw_invalid("[JsonConstraint] token " + std::to_string(id) + " cannot come next in the JSON document.");
  }
}

}  // namespace nuvec::lm
