#pragma once

// The normalizers of a tokenizer.json ("normalizer"): Unicode normal forms, case, stripping, prepending and
// replacing, and sequences of them. Each kind is a small type; Normalizer holds one of the closed set.

#include <memory>
#include <string>
#include <string_view>

#include "nuvec/lm/tokenizer/json_field.h"

namespace nuvec::lm {

class Normalizer {
 public:
  /// The identity (a tokenizer.json whose "normalizer" is null).
  Normalizer();
  /// Reads a "normalizer" object; a null field gives the identity. Throws naming the path for a malformed or
  /// unsupported one.
  static Normalizer from_json(const detail::JsonField& field);

  /// `text` normalized (`text` is valid UTF-8).
  [[nodiscard]] std::string apply(std::string_view text) const;
  /// `text` normalized; clears `keeps_start` when normalizing drops or moves the start of `text` (so the result
  /// does not begin at the input's first character, which Metaspace's prepend_scheme "first" depends on).
  [[nodiscard]] std::string apply(std::string_view text, bool& keeps_start) const;
  /// Whether this is the identity (so the tokenizer can skip it).
  [[nodiscard]] bool identity() const;

  struct Impl;

 private:
  std::shared_ptr<const Impl> impl_;
};

}  // namespace nuvec::lm
