// The tokenizer's UTF-8 and byte-level helpers.

#include "nuvec/lm/utf8.h"

#include <gtest/gtest.h>

#include <string>

#include "nuvec/lm/tokenizer/byte_level.h"

namespace nuvec::lm::detail {
namespace {

TEST(Utf8, ValidPrefixStopsAtTheFirstMalformedSequence) {
  EXPECT_EQ(valid_utf8_prefix("abc"), 3u);
  EXPECT_EQ(valid_utf8_prefix("a\xC3\xA9"), 3u);          // é
  EXPECT_EQ(valid_utf8_prefix("a\xC3"), 1u);              // cut short
  EXPECT_EQ(valid_utf8_prefix("a\xC0\x80"), 1u);          // overlong NUL
  EXPECT_EQ(valid_utf8_prefix("\xED\xA0\x80"), 0u);       // a surrogate
  EXPECT_EQ(valid_utf8_prefix("\xF4\x90\x80\x80"), 0u);   // past U+10FFFF
  EXPECT_EQ(valid_utf8_prefix("\xF0\x9F\x98\x80!"), 5u);  // an emoji then '!'
}

TEST(Utf8, PartialCharacterIsWhatLaterBytesCouldComplete) {
  EXPECT_EQ(partial_character_length(""), 0u);
  EXPECT_EQ(partial_character_length("abc"), 0u);
  EXPECT_EQ(partial_character_length("a\xE2"), 1u);
  EXPECT_EQ(partial_character_length("a\xE2\x82"), 2u);
  EXPECT_EQ(partial_character_length("a\xE2\x82\xAC"), 0u);      // complete
  EXPECT_EQ(partial_character_length("\xF0\x9F\x98"), 3u);
  EXPECT_EQ(partial_character_length("\x82"), 0u);              // a lone continuation byte
  EXPECT_EQ(partial_character_length("\xE2\x41"), 0u);          // broken by what follows
  EXPECT_EQ(partial_character_length("\xC0"), 0u);              // never a lead byte
  EXPECT_EQ(partial_character_length("\xED\xA0"), 0u);          // only a surrogate could follow
  EXPECT_EQ(partial_character_length("\xF4\x90"), 0u);          // past U+10FFFF
  EXPECT_EQ(partial_character_length("\xE0\xA0"), 2u);
}

TEST(Utf8, LossyReplacesEachMaximalIllFormedPart) {
  // The examples of the Unicode standard's "U+FFFD substitution of maximal subparts".
  EXPECT_EQ(utf8_lossy("a\xF1\x80\x80\xE1\x80\xC2" "b"), "a\uFFFD\uFFFD\uFFFDb");
  EXPECT_EQ(utf8_lossy("\xC0\xAF"), "\uFFFD\uFFFD");
  EXPECT_EQ(utf8_lossy("\xED\xA0\x80"), "\uFFFD\uFFFD\uFFFD");
  EXPECT_EQ(utf8_lossy("\xE2\x82\xAC\xE2"), "\u20AC\uFFFD");
  EXPECT_EQ(utf8_lossy("plain"), "plain");
}

TEST(Utf8, CodePointsRoundTrip) {
  for (char32_t cp : {U'\0', U'A', U'\u00E9', U'\u2581', U'\uFFFD', U'\U0001F600', U'\U0010FFFF'}) {
    std::string encoded;
    append_utf8(encoded, cp);
    size_t pos = 0;
    EXPECT_EQ(next_code_point(encoded, pos), cp);
    EXPECT_EQ(pos, encoded.size());
  }
  size_t pos = 0;
  EXPECT_EQ(next_code_point("\xFF", pos), U'\uFFFD');
  EXPECT_EQ(pos, 1u);
}

TEST(ByteLevel, AlphabetMatchesGpt2) {
  // Facts of GPT-2's encoder: the space is U+0120 'Ġ', the newline U+010A 'Ċ', 'A' itself, byte 0xAD U+0143.
  const auto& chars = byte_level_chars();
  EXPECT_EQ(chars[' '], "\xC4\xA0");
  EXPECT_EQ(chars['\n'], "\xC4\x8A");
  EXPECT_EQ(chars['A'], "A");
  EXPECT_EQ(chars[0xAD], "\xC5\x83");
  std::string all;
  for (int byte = 0; byte < 256; ++byte) {
    all.push_back(static_cast<char>(byte));
  }
  std::string mapped;
  to_byte_level(all, mapped);
  EXPECT_EQ(from_byte_level(mapped), all);
  EXPECT_FALSE(from_byte_level("\xE2\x96\x81").has_value());  // U+2581 is not in the alphabet
}

}  // namespace
}  // namespace nuvec::lm::detail
