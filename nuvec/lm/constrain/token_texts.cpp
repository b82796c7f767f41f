#include "nuvec/lm/constrain/token_texts.h"

#include <algorithm>
#include <optional>

namespace nuvec::lm {

TokenTexts::TokenTexts(const Tokenizer& tokenizer, int vocab_size)
    : texts_(static_cast<size_t>(vocab_size)), plain_(static_cast<size_t>(vocab_size)) {
  const auto known = static_cast<int32_t>(std::min<size_t>(tokenizer.vocab_size(), static_cast<size_t>(vocab_size)));
  for (int32_t id = 0; id < known; ++id) {
    if (!tokenizer.id_to_token(id) || tokenizer.is_special(id)) {
      continue;
    }
    std::string& text = texts_[static_cast<size_t>(id)];
    text = tokenizer.token_bytes(id);
    if (text.empty()) {
      continue;
    }
    const bool plain = std::ranges::none_of(text, [](char c) {
      const auto b = static_cast<uint8_t>(c);
      return b < 0x20 || b == '"' || b == '\\';
    });
    plain_[static_cast<size_t>(id)] = plain ? 1 : 0;
    by_first_byte_[static_cast<uint8_t>(text.front())].push_back(id);
  }
}

}  // namespace nuvec::lm
