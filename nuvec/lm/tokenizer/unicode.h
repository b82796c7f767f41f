#pragma once

// Unicode character classes and case mapping as Rust's standard library and the crates Hugging Face's tokenizers
// use define them, on top of utf8proc.

#include <string>
#include <string_view>

namespace nuvec::lm::detail {

/// Rust's char::is_whitespace: the Unicode White_Space property.
bool is_white_space(char32_t cp);
/// General category P* (Rust's unicode_categories is_punctuation).
bool is_punctuation(char32_t cp);
/// Rust's char::is_ascii_punctuation or general category P* (the BERT and Punctuation pre-tokenizers).
bool is_bert_punctuation(char32_t cp);
/// Rust's char::is_numeric: general category Nd, Nl or No.
bool is_numeric(char32_t cp);
/// What BERT's clean_text drops as a control character: general category Cc, Cf or Co as the reference
/// classifies them, but not tab, newline or carriage return.
bool is_bert_control(char32_t cp);
/// General category Mn.
bool is_nonspacing_mark(char32_t cp);
/// General category M* (Mn, Mc, Me).
bool is_mark(char32_t cp);
/// A character of the regex crate's \w: Alphabetic, M*, Nd, Pc or Join_Control.
bool is_regex_word(char32_t cp);

/// Appends Rust's char::to_lowercase of `cp` (full case mapping, without context).
void append_lowercase(std::string& out, char32_t cp);

/// Unicode normal forms through utf8proc.
enum class NormalForm { nfc, nfd, nfkc, nfkd };

/// `text` (valid UTF-8) in normal form `form`.
std::string normalize_form(std::string_view text, NormalForm form);

}  // namespace nuvec::lm::detail
