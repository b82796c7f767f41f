#include "nuvec/lm/tokenizer/normalizer.h"

#include <variant>
#include <vector>

#include "nuvec/lm/tokenizer/byte_level.h"
#include "nuvec/lm/overload.h"
#include "nuvec/lm/tokenizer/precompiled.h"
#include "nuvec/lm/tokenizer/regex.h"
#include "nuvec/lm/tokenizer/unicode.h"
#include "nuvec/lm/utf8.h"

namespace nuvec::lm {

namespace {

using detail::JsonField;

/// Calls `fn(cp, bytes)` for each character of `text`.
template <class Fn>
void for_each_char(std::string_view text, Fn&& fn) {
  for (size_t pos = 0; pos < text.size();) {
    size_t begin = pos;
    char32_t cp = detail::next_code_point(text, pos);
    fn(cp, text.substr(begin, pos - begin));
  }
}

/// The first character of `text` (0 when it is empty).
char32_t first_char(std::string_view text) {
  size_t pos = 0;
  return text.empty() ? 0 : detail::next_code_point(text, pos);
}

struct Nfc {};
struct Nfd {};
struct Nfkc {};
struct Nfkd {};
struct Lowercase {};
struct StripAccents {};
struct Nmt {};
struct ByteLevelNormalizer {};

struct Strip {
  bool left = true;
  bool right = true;
};

struct Prepend {
  std::string prepend;
};

struct Replace {
  std::string literal;                         // the pattern when it is a string
  std::shared_ptr<const detail::Regex> regex;  // the pattern when it is a regex
  std::string content;
};

struct BertNormalizer {
  bool clean_text = true;
  bool handle_chinese_chars = true;
  bool strip_accents = true;
  bool lowercase = true;
};

struct Precompiled {
  std::shared_ptr<const detail::PrecompiledCharsmap> charsmap;
};

struct Sequence {
  std::vector<Normalizer> normalizers;
};

using Kind = std::variant<Nfc, Nfd, Nfkc, Nfkd, Lowercase, StripAccents, Nmt, ByteLevelNormalizer, Strip, Prepend,
                          Replace, BertNormalizer, Precompiled, Sequence>;

std::string lowercase(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for_each_char(text, [&](char32_t cp, std::string_view) { detail::append_lowercase(out, cp); });
  return out;
}

/// Keeps the characters `keep` accepts.
template <class Keep>
std::string filter(std::string_view text, Keep&& keep) {
  std::string out;
  out.reserve(text.size());
  for_each_char(text, [&](char32_t cp, std::string_view bytes) {
    if (keep(cp)) {
      out += bytes;
    }
  });
  return out;
}

std::string strip(std::string_view text, bool left, bool right, bool& keeps_start) {
  size_t begin = 0;
  size_t end = text.size();
  if (left) {
    while (begin < end) {
      size_t pos = begin;
      if (!detail::is_white_space(detail::next_code_point(text, pos))) {
        break;
      }
      begin = pos;
    }
  }
  if (right) {
    while (end > begin) {
      size_t start = end - 1;
      while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) {
        --start;
      }
      size_t pos = start;
      if (!detail::is_white_space(detail::next_code_point(text, pos))) {
        break;
      }
      end = start;
    }
  }
  keeps_start = begin == 0;
  return std::string(text.substr(begin, end - begin));
}

/// HF aligns replacement characters with the last character of the match, so the text keeps its start only when a
/// match there is empty or one character replaced by something.
std::string replace(const Replace& rule, std::string_view text, bool& keeps_start) {
  std::string out;
  out.reserve(text.size());
  size_t last = 0;
  if (text.empty()) {
    // HF finds no match in an empty string, not even an empty one.
    return out;
  }
  if (rule.regex) {
    rule.regex->for_each_match(text, [&](size_t start, size_t end) {
      if (start == 0 && end > 0) {
        keeps_start = !rule.content.empty() && detail::utf8_length(static_cast<unsigned char>(text[0])) == end;
      }
      out.append(text, last, start - last);
      out += rule.content;
      last = end;
    });
  } else if (!rule.literal.empty()) {
    for (size_t at = text.find(rule.literal); at != std::string_view::npos; at = text.find(rule.literal, last)) {
      if (at == 0) {
        keeps_start =
            !rule.content.empty() && detail::utf8_length(static_cast<unsigned char>(text[0])) == rule.literal.size();
      }
      out.append(text, last, at - last);
      out += rule.content;
      last = at + rule.literal.size();
    }
  }
  out.append(text, last);
  return out;
}

bool is_chinese_char(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

std::string bert_normalize(const BertNormalizer& bert, std::string_view input, bool& keeps_start) {
  std::string text(input);
  if (bert.clean_text) {
    char32_t first = first_char(text);
    keeps_start = !(first == 0xFFFD || detail::is_bert_control(first));
    std::string out;
    out.reserve(text.size());
    for_each_char(text, [&](char32_t cp, std::string_view bytes) {
      if (cp == 0 || cp == 0xFFFD || detail::is_bert_control(cp)) {
        return;
      }
      if (cp == '\t' || cp == '\n' || cp == '\r' || detail::is_white_space(cp)) {
        out += ' ';
      } else {
        out += bytes;
      }
    });
    text = std::move(out);
  }
  if (bert.handle_chinese_chars) {
    std::string out;
    out.reserve(text.size());
    for_each_char(text, [&](char32_t cp, std::string_view bytes) {
      if (is_chinese_char(cp)) {
        out += ' ';
        out += bytes;
        out += ' ';
      } else {
        out += bytes;
      }
    });
    text = std::move(out);
  }
  if (bert.strip_accents) {
    text = detail::normalize_form(text, detail::NormalForm::nfd);
    keeps_start = keeps_start && !detail::is_nonspacing_mark(first_char(text));
    text = filter(text, [](char32_t cp) { return !detail::is_nonspacing_mark(cp); });
  }
  if (bert.lowercase) {
    text = lowercase(text);
  }
  return text;
}

bool nmt_removes(char32_t cp) {
  return (cp >= 0x01 && cp <= 0x08) || cp == 0x0B || (cp >= 0x0E && cp <= 0x1F) || cp == 0x7F || cp == 0x8F ||
         cp == 0x9F;
}

std::string nmt(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for_each_char(text, [&](char32_t cp, std::string_view bytes) {
    if (nmt_removes(cp)) {
      return;
    }
    bool to_space = cp == 0x09 || cp == 0x0A || cp == 0x0C || cp == 0x0D || cp == 0x1680 ||
                    (cp >= 0x200B && cp <= 0x200F) || cp == 0x2028 || cp == 0x2029 || cp == 0x2581 || cp == 0xFEFF ||
                    cp == 0xFFFD;
    if (to_space) {
      out += ' ';
    } else {
      out += bytes;
    }
  });
  return out;
}

/// `text` normalized by `kind`; clears `keeps_start` when the first character left does not come from the start of
/// `text` (HF's alignments, which decide Metaspace's prepend_scheme "first").
std::string run(const Kind& kind, std::string_view text, bool& keeps_start) {
  return std::visit(detail::Overload{
                        [&](const Nfc&) { return detail::normalize_form(text, detail::NormalForm::nfc); },
                        [&](const Nfd&) { return detail::normalize_form(text, detail::NormalForm::nfd); },
                        [&](const Nfkc&) { return detail::normalize_form(text, detail::NormalForm::nfkc); },
                        [&](const Nfkd&) { return detail::normalize_form(text, detail::NormalForm::nfkd); },
                        [&](const Lowercase&) { return lowercase(text); },
                        [&](const StripAccents&) {
                          keeps_start = keeps_start && !detail::is_mark(first_char(text));
                          return filter(text, [](char32_t cp) { return !detail::is_mark(cp); });
                        },
                        [&](const Nmt&) {
                          keeps_start = keeps_start && !nmt_removes(first_char(text));
                          return nmt(text);
                        },
                        [&](const ByteLevelNormalizer&) {
                          std::string out;
                          detail::to_byte_level(text, out);
                          return out;
                        },
                        [&](const Strip& s) {
                          bool kept = true;
                          std::string out = strip(text, s.left, s.right, kept);
                          keeps_start = keeps_start && kept;
                          return out;
                        },
                        [&](const Prepend& p) { return text.empty() ? std::string() : p.prepend + std::string(text); },
                        [&](const Replace& r) {
                          bool kept = true;
                          std::string out = replace(r, text, kept);
                          keeps_start = keeps_start && kept;
                          return out;
                        },
                        [&](const BertNormalizer& b) {
                          bool kept = true;
                          std::string out = bert_normalize(b, text, kept);
                          keeps_start = keeps_start && kept;
                          return out;
                        },
                        [&](const Precompiled& p) { return p.charsmap->normalize(text); },
                        [&](const Sequence& s) {
                          std::string out(text);
                          for (const Normalizer& n : s.normalizers) {
                            out = n.apply(out, keeps_start);
                          }
                          return out;
                        },
                    },
                    kind);
}

Kind parse(const JsonField& field) {
  std::string type = field["type"].string();
  if (type == "NFC") {
    return Nfc{};
  }
  if (type == "NFD") {
    return Nfd{};
  }
  if (type == "NFKC") {
    return Nfkc{};
  }
  if (type == "NFKD") {
    return Nfkd{};
  }
  if (type == "Lowercase") {
    return Lowercase{};
  }
  if (type == "StripAccents") {
    return StripAccents{};
  }
  if (type == "Nmt") {
    return Nmt{};
  }
  if (type == "ByteLevel") {
    return ByteLevelNormalizer{};
  }
  if (type == "Strip") {
    return Strip{field.boolean_or("strip_left", true), field.boolean_or("strip_right", true)};
  }
  if (type == "Prepend") {
    return Prepend{field["prepend"].string()};
  }
  if (type == "Replace") {
    JsonField pattern = field["pattern"];
    Replace rule;
    rule.content = field["content"].string();
    if (auto literal = pattern.find("String")) {
      rule.literal = literal->string();
    } else if (auto regex = pattern.find("Regex")) {
      rule.regex = detail::compile_regex(*regex);
    } else {
      pattern.fail("expected {\"String\": ...} or {\"Regex\": ...}");
    }
    return rule;
  }
  if (type == "BertNormalizer") {
    bool lowercase = field.boolean_or("lowercase", true);
    return BertNormalizer{field.boolean_or("clean_text", true), field.boolean_or("handle_chinese_chars", true),
                          field.boolean_or("strip_accents", lowercase), lowercase};
  }
  if (type == "Precompiled") {
    JsonField charsmap = field["precompiled_charsmap"];
    auto bytes = detail::decode_base64(charsmap.string());
    if (!bytes) {
      charsmap.fail("expected base64");
    }
    if (bytes->empty()) {
      return Sequence{};
    }
    return Precompiled{std::make_shared<const detail::PrecompiledCharsmap>(*bytes, charsmap.path())};
  }
  if (type == "Sequence") {
    JsonField list = field["normalizers"];
    Sequence sequence;
    for (size_t i = 0; i < list.size(); ++i) {
      Normalizer n = Normalizer::from_json(list.at(i));
      if (!n.identity()) {
        sequence.normalizers.push_back(std::move(n));
      }
    }
    return sequence;
  }
  field["type"].unsupported("unknown normalizer type '" + type + "'");
}

}  // namespace

struct Normalizer::Impl {
  Kind kind;
};

Normalizer::Normalizer() = default;

Normalizer Normalizer::from_json(const JsonField& field) {
  Normalizer normalizer;
  if (field.is_null()) {
    return normalizer;
  }
  Kind kind = parse(field);
  // An empty sequence is the identity; keep it null so the tokenizer can skip it.
  if (auto* sequence = std::get_if<Sequence>(&kind); sequence != nullptr && sequence->normalizers.empty()) {
    return normalizer;
  }
  normalizer.impl_ = std::make_shared<const Impl>(Impl{std::move(kind)});
  return normalizer;
}

std::string Normalizer::apply(std::string_view text) const {
  bool keeps_start = true;
  return apply(text, keeps_start);
}

std::string Normalizer::apply(std::string_view text, bool& keeps_start) const {
  if (!impl_) {
    return std::string(text);
  }
  return run(impl_->kind, text, keeps_start);
}

bool Normalizer::identity() const { return impl_ == nullptr; }

}  // namespace nuvec::lm
