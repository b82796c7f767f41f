#pragma once

// Constrained decoding to JSON: the tokens allowed next are those whose bytes keep the text the beginning of a
// document matching a schema (response_format json_object and json_schema).

#include <cstdint>
#include <memory>
#include <vector>

#include "nuvec/lm/constrain/json_matcher.h"
#include "nuvec/lm/constrain/json_schema.h"
#include "nuvec/lm/constrain/token_texts.h"
#include "nuvec/lm/generate/token_constraint.h"

namespace nuvec::lm {

class JsonConstraint final : public TokenConstraint {
 public:
  /// One sequence's constraint; the schema and the texts may be shared by many.
  JsonConstraint(std::shared_ptr<const JsonSchema> schema, std::shared_ptr<const TokenTexts> texts);

  /// Tries each token whose first byte can come next, feeding its bytes to a copy of the parser; inside a free
  /// string, tokens of plain string bytes are allowed without trying them.
  void allowed(std::vector<uint8_t>& mask) override;
  void accept(int32_t id) override;
  [[nodiscard]] bool complete() const override { return matcher_.complete(); }

 private:
  std::shared_ptr<const JsonSchema> schema_;
  std::shared_ptr<const TokenTexts> texts_;
  JsonMatcher matcher_;
};

}  // namespace nuvec::lm
