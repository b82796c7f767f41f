#pragma once

// A compiled regular expression with the semantics of the Oniguruma patterns tokenizer.json files are written for,
// run on PCRE2 with JIT. Patterns are translated where the dialects differ (\s, \w, \h, \uHHHH); matching is
// const and safe from several threads (match data is per thread).

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "nuvec/lm/tokenizer/json_field.h"

namespace nuvec::lm::detail {

class Regex {
 public:
  /// Compiles an Oniguruma-style `pattern`; throws nuvec::error (invalid_argument) when it does not compile.
  explicit Regex(std::string_view pattern);

  /// Calls `on_match(start, end)` for each match in `text` in order, skipping an empty match right after the
  /// previous match the way Oniguruma's iterator does.
  template <class OnMatch>
  void for_each_match(std::string_view text, OnMatch&& on_match) const {
    size_t from = 0;
    size_t last_end = std::string_view::npos;
    size_t start = 0;
    size_t end = 0;
    while (from <= text.size() && find(text, from, start, end)) {
      if (start == end && end == last_end) {
        from = end + step(text, end);
        continue;
      }
      on_match(start, end);
      last_end = end;
      from = end;
    }
  }

  /// The translated pattern PCRE2 compiles (for tests and messages).
  [[nodiscard]] const std::string& translated() const { return translated_; }

  struct Code;

 private:
  /// Finds the first match at or after `from`; false when there is none.
  bool find(std::string_view text, size_t from, size_t& start, size_t& end) const;
  /// The length of the character at `pos` (1 at the end of the text).
  static size_t step(std::string_view text, size_t pos);

  std::string translated_;
  std::shared_ptr<const Code> code_;
};

/// Compiles the pattern in a string field; the error for a bad one names the file and the field.
std::shared_ptr<const Regex> compile_regex(const JsonField& field);

/// The Oniguruma pattern translated to PCRE2 syntax.
std::string translate_onig_pattern(std::string_view pattern);

}  // namespace nuvec::lm::detail
