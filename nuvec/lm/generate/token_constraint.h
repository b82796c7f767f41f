#pragma once

// Constrained decoding: a sequence's constraint says which tokens may come next (a JSON grammar, ...). Generation
// masks the others out before sampling (stop ids only once the constraint is complete) and feeds each chosen token
// back; a sequence whose constraint allows nothing more ends with finish reason "stop".

#include <cstdint>
#include <vector>

namespace nuvec::lm {

class TokenConstraint {
 public:
  TokenConstraint() = default;
  virtual ~TokenConstraint() = default;
  TokenConstraint(const TokenConstraint&) = delete;
  TokenConstraint& operator=(const TokenConstraint&) = delete;
  TokenConstraint(TokenConstraint&&) = delete;
  TokenConstraint& operator=(TokenConstraint&&) = delete;

  /// Sets mask[id] (sized to the model's vocabulary, zeroed) to 1 for each token that may come next. Stop ids are
  /// the generator's: it allows them when complete().
  virtual void allowed(std::vector<uint8_t>& mask) = 0;
  /// Advances past `id`, a token allowed() allowed.
  virtual void accept(int32_t id) = 0;
  /// Whether the text so far is whole, so generation may stop here.
  [[nodiscard]] virtual bool complete() const = 0;
};

}  // namespace nuvec::lm
