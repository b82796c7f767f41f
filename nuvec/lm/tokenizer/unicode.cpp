#include "nuvec/lm/tokenizer/unicode.h"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>

#include "nuvec/core/error.h"
#include "nuvec/lm/utf8.h"

namespace nuvec::lm::detail {

namespace {

utf8proc_category_t category(char32_t cp) { return utf8proc_category(static_cast<utf8proc_int32_t>(cp)); }

}  // namespace

bool is_white_space(char32_t cp) {
  if (cp < 0x80) {
    return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20;
  }
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

bool is_punctuation(char32_t cp) {
  auto c = category(cp);
  return c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
}

bool is_bert_punctuation(char32_t cp) {
  bool ascii_punctuation = (cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x40) || (cp >= 0x5B && cp <= 0x60) ||
                           (cp >= 0x7B && cp <= 0x7E);
  return ascii_punctuation || is_punctuation(cp);
}

bool is_numeric(char32_t cp) {
  if (cp < 0x80) {
    return cp >= '0' && cp <= '9';
  }
  auto c = category(cp);
  return c >= UTF8PROC_CATEGORY_ND && c <= UTF8PROC_CATEGORY_NO;
}

bool is_bert_control(char32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') {
    return false;
  }
  // The reference's category tables are Unicode 8.0's: the format characters added since stay, as do
  // unassigned code points.
  bool newer_format = cp == 0x08E2 || cp == 0x0890 || cp == 0x0891 || cp == 0x110CD || (cp >= 0x13430 && cp <= 0x1343F);
  auto c = category(cp);
  return (c == UTF8PROC_CATEGORY_CC || c == UTF8PROC_CATEGORY_CF || c == UTF8PROC_CATEGORY_CO) && !newer_format;
}

bool is_nonspacing_mark(char32_t cp) { return category(cp) == UTF8PROC_CATEGORY_MN; }

bool is_mark(char32_t cp) {
  auto c = category(cp);
  return c >= UTF8PROC_CATEGORY_MN && c <= UTF8PROC_CATEGORY_ME;
}

bool is_regex_word(char32_t cp) {
  if (cp < 0x80) {
    return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || cp == '_';
  }
  auto c = category(cp);
  // Alphabetic is the letters, Nl and Other_Alphabetic; the latter is marks apart from the circled letters.
  return (c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_ME) || c == UTF8PROC_CATEGORY_ND ||
         c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_PC || cp == 0x200C || cp == 0x200D ||
         (cp >= 0x24B6 && cp <= 0x24E9) || (cp >= 0x1F130 && cp <= 0x1F149) || (cp >= 0x1F150 && cp <= 0x1F169) ||
         (cp >= 0x1F170 && cp <= 0x1F189);
}

void append_lowercase(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp >= 'A' && cp <= 'Z' ? cp + 32 : cp);
    return;
  }
  // The one unconditional multi-character lowercase mapping (SpecialCasing.txt): İ -> i + combining dot above.
  if (cp == 0x130) {
    out += "i\xCC\x87";
    return;
  }
  append_utf8(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))));
}

std::string normalize_form(std::string_view text, NormalForm form) {
  bool ascii = true;
  for (char c : text) {
    if (static_cast<unsigned char>(c) >= 0x80) {
      ascii = false;
      break;
    }
  }
  if (ascii) {
    return std::string(text);
  }
  int options = UTF8PROC_STABLE;
  switch (form) {
    case NormalForm::nfc:
      options |= UTF8PROC_COMPOSE;
      break;
    case NormalForm::nfd:
      options |= UTF8PROC_DECOMPOSE;
      break;
    case NormalForm::nfkc:
      options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
      break;
    case NormalForm::nfkd:
      options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
      break;
  }
  utf8proc_uint8_t* result = nullptr;
  utf8proc_ssize_t length =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()), static_cast<utf8proc_ssize_t>(text.size()),
                   &result, static_cast<utf8proc_option_t>(options));
  if (length < 0) {
    throw_invalid(std::string("Unicode normalization failed: ") + utf8proc_errmsg(length));
  }
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(result, &std::free);
  return std::string(reinterpret_cast<const char*>(result), static_cast<size_t>(length));
}

}  // namespace nuvec::lm::detail
