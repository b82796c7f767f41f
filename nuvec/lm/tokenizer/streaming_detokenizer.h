#pragma once

// Turns ids into text one at a time, as a streaming server needs: it never returns a broken UTF-8 sequence, and the
// pieces it returns, concatenated, are exactly Tokenizer::decode of all the ids.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace nuvec::lm {

namespace detail {
struct TokenizerState;
}

class StreamingDetokenizer {
 public:
  /// Adds `id` (throws for an id outside the vocabulary); returns the text that became final, possibly empty.
  std::string add(int32_t id);
  /// Returns the text still held back and starts a new stream.
  std::string finish();

 private:
  friend class Tokenizer;
  StreamingDetokenizer(std::shared_ptr<const detail::TokenizerState> state, bool skip_special_tokens);
  /// Whether the bytes of the ids not yet returned end in a character that later bytes could still complete.
  [[nodiscard]] bool ends_inside_character() const;

  std::shared_ptr<const detail::TokenizerState> state_;
  bool skip_special_tokens_;
  std::vector<int32_t> ids_;  // the window: context ids, then the ids not yet returned
  size_t prefix_ids_ = 0;     // how many ids of the window are context
  std::string prefix_;        // the text of the context ids
};

}  // namespace nuvec::lm
