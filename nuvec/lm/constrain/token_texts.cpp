#include "nuvec/lm/constrain/token_texts.h"

#include <algorithm>
#include <optional>

#include "nuvec/lm/tokenizer/byte_level.h"
#include "nuvec/lm/utf8.h"

namespace nuvec::lm {
namespace {

/// A token's bytes. A decoder may change a token alone (dropping a leading space, or turning a partial UTF-8
/// character into U+FFFD), so the vocabulary's spelling is read where its form is known: SentencePiece's U+2581
/// for a space, <0xXX> byte tokens, and byte-level tokens that end inside a character; decode() gives the rest.
std::string token_bytes(const Tokenizer& tokenizer, int32_t id, const std::string& token) {
  static const std::string metaspace = "\xE2\x96\x81";
  if (token.find(metaspace) != std::string::npos) {
    std::string text;
    for (size_t i = 0; i < token.size();) {
      const bool space = token.compare(i, metaspace.size(), metaspace) == 0;
      text += space ? std::string(" ") : token.substr(i, 1);
      i += space ? metaspace.size() : 1;
    }
    return text;
  }
  if (token.size() == 6 && token.starts_with("<0x") && token.ends_with(">")) {
    return std::string(1, static_cast<char>(std::stoi(token.substr(3, 2), nullptr, 16)));
  }
  if (const std::optional<std::string> bytes = detail::from_byte_level(token);
      bytes && !detail::is_valid_utf8(*bytes)) {
    return *bytes;
  }
  const int32_t ids[] = {id};
  return tokenizer.decode(ids);
}

}  // namespace

TokenTexts::TokenTexts(const Tokenizer& tokenizer, int vocab_size)
    : texts_(static_cast<size_t>(vocab_size)), plain_(static_cast<size_t>(vocab_size)) {
  const auto known = static_cast<int32_t>(std::min<size_t>(tokenizer.vocab_size(), static_cast<size_t>(vocab_size)));
  for (int32_t id = 0; id < known; ++id) {
    const std::optional<std::string> token = tokenizer.id_to_token(id);
    if (!token || tokenizer.is_special(id)) {
      continue;
    }
    std::string& text = texts_[static_cast<size_t>(id)];
    text = token_bytes(tokenizer, id, *token);
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
